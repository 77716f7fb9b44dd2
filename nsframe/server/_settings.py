"""One typed declaration per server setting, from which everything else is derived.

A setting is a dataclass field of `ServerConfig` (or of `Limits`) made with `setting()`:
its type, default, help text, whether it is secret, and its *kind*, which knows how to
check a Python value, read one from text (an ``NSFRAME_*`` variable or a flag) or from
the config file, merge two sources and show a value with secrets masked. The flags of
``nsframe serve``, the file's keys, the environment variables, ``--print-config``, the
masked ``repr`` and the docs' settings table are all derived from these fields
(`nsframe.server._config_file`). CONTRIBUTING.md, "Adding a server setting", says how.

Plain dataclass metadata, not pydantic-settings: the config is read once, at start-up,
and pydantic-settings alone takes 130-320 ms to import, against about 15 ms for this
derivation and one merge of the sources (benchmarks/bench_settings.py). The kinds parse
and check strings, sizes, credentials and file-relative paths as nsframe wrote them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_PREFIX = "NSFRAME_"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b?)\s*$", re.I)
# A storage option whose name says it holds a credential: masked wherever it is shown.
_SECRET_OPTION = re.compile(r"secret|token|password|key|credential|sas|signature", re.I)
MASK = "<masked>"


def parse_size(text: str | int) -> int:
    """Bytes from ``1048576``, ``512KiB``, ``16MiB``, ``64G`` (binary units); >= 1."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a size: write bytes, or a number with KiB/MiB/GiB")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(str(text))
        if match is None:
            raise ValueError(f"{text!r} is not a size: write bytes, or a number with KiB/MiB/GiB")
        power = " kmgt".index(match.group(2).lower() or " ")
        value = int(match.group(1)) * 1024**power
    if value < 1:
        raise ValueError(f"A size limit must be at least 1 byte, got {text!r}")
    return value


@dataclass(frozen=True)
class FileContext:
    """What a config file's value may refer to: its folder, and the environment
    (``key_env = "VARIABLE"``)."""

    base: Path
    environ: Mapping[str, str]

    def path(self, value: object) -> str:
        """A local path relative to the file's folder; a URI (``s3://...``) as it is."""
        text = str(value)
        if "://" in text:
            return text
        path = Path(text).expanduser()
        return str(path if path.is_absolute() else self.base / path)

    def variable(self, name: object, what: str) -> str:
        if str(name) not in self.environ:
            raise ValueError(f"{what}: the variable {name} is not set")
        return self.environ[str(name)]


class Kind:
    """How one type of setting is checked, read, merged and shown. The defaults fit a
    scalar: a higher source replaces a lower one."""

    metavar = "VALUE"
    repeatable = False  # the flag may be given several times (argparse append)
    boolean = False  # the flag is --NAME / --no-NAME

    def coerce(self, value: Any) -> Any:
        """The value checked and normalized (ValueError/TypeError says what to fix)."""
        return value

    def from_text(self, text: str) -> Any:
        """From an ``NSFRAME_*`` variable or one flag."""
        return text

    def from_flag(self, text: str) -> Any:
        """From one flag: the same as a variable, but for a list, one item."""
        return self.from_text(text)

    def from_file(self, value: Any, context: FileContext) -> Any:
        return value

    def combine(self, lower: Any, higher: Any) -> Any:
        return higher

    def show(self, value: Any, secret: bool) -> str:
        """The value as TOML would write it, a secret masked."""
        if secret and value:
            return json.dumps(MASK)
        return _toml(value)

    def masked_repr(self, value: Any, secret: bool) -> str:
        return MASK if secret and value else repr(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


class Text(Kind):
    def __init__(self, *, path: bool = False, choices: tuple[str, ...] = (),
                 metavar: str = "TEXT") -> None:
        self.path, self.choices, self.metavar = path, choices, metavar

    def coerce(self, value: Any) -> Any:
        if self.path:
            if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
                raise ValueError(f"give a path or a URI, got {value!r}")
            return value
        if not isinstance(value, str):
            raise ValueError(f"give a string, got {value!r}")
        if self.choices and value not in self.choices:
            raise ValueError(f"give one of {', '.join(self.choices)}, got {value!r}")
        return value

    def from_file(self, value: Any, context: FileContext) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"give a string, got {value!r}")
        return context.path(value) if self.path else value

    def masked_repr(self, value: Any, secret: bool) -> str:
        return MASK if secret and value else repr(os.fspath(value) if self.path else value)


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class Flag(Kind):
    metavar = "BOOL"
    boolean = True

    def coerce(self, value: Any) -> Any:
        if not isinstance(value, bool):
            raise ValueError(f"give true or false, got {value!r}")
        return value

    def from_text(self, text: str) -> Any:
        if text.strip().lower() in _TRUE:
            return True
        if text.strip().lower() in _FALSE:
            return False
        raise ValueError(f"give true or false, got {text!r}")


class Number(Kind):
    """An int or a float with a lower bound (``above``: strictly greater)."""

    def __init__(self, kind: type, *, minimum: float = 0, above: bool = False,
                 maximum: float | None = None, metavar: str = "NUMBER") -> None:
        self.kind, self.minimum, self.above, self.metavar = kind, minimum, above, metavar
        self.maximum = maximum

    def _bound(self) -> str:
        unit = "a whole number" if self.kind is int else "a number"
        upper = "" if self.maximum is None else f" and at most {self.maximum:g}"
        return f"{unit} {'above' if self.above else 'at least'} {self.minimum:g}{upper}"

    def coerce(self, value: Any) -> Any:
        if isinstance(value, float) and self.kind is int and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.kind is int and not isinstance(value, int)):
            raise ValueError(f"give {self._bound()}, got {value!r}")
        if not math.isfinite(value) or value < self.minimum or (
                self.above and value == self.minimum) or (
                self.maximum is not None and value > self.maximum):
            raise ValueError(f"give {self._bound()}, got {value!r}")
        return self.kind(value)

    def from_text(self, text: str) -> Any:
        try:
            return self.kind(text.strip())
        except ValueError:
            raise ValueError(f"give {self._bound()}, got {text!r}") from None


class Size(Kind):
    metavar = "SIZE"

    def coerce(self, value: Any) -> Any:
        return parse_size(value)

    def show(self, value: Any, secret: bool) -> str:
        for unit, power in (("GiB", 3), ("MiB", 2), ("KiB", 1)):
            if value % 1024**power == 0:
                return json.dumps(f"{value // 1024**power}{unit}")
        return str(value)


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


class Names(Kind):
    """A list of strings: comma-separated in a variable, one per flag; sources add up."""

    repeatable = True

    def __init__(self, metavar: str = "NAME") -> None:
        self.metavar = metavar

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, Iterable) or not all(
                isinstance(v, str) for v in value):
            raise ValueError(f"give a list of strings, got {value!r}")
        return list(value)

    def from_text(self, text: str) -> Any:
        return _split(text)

    def from_flag(self, text: str) -> Any:
        return [text.strip()]

    def combine(self, lower: Any, higher: Any) -> Any:
        return [*lower, *(v for v in higher if v not in lower)]


class Pairs(Kind):
    """A table of NAME = VALUE: ``NAME=VALUE,...`` in a variable, one pair per flag,
    ``NAME_env = "VARIABLE"`` in the file when ``indirect``. Sources add up; where they
    name the same NAME the higher one wins. ``secret_values`` masks the values whose
    names look like credentials."""

    repeatable = True

    def __init__(self, *, path: bool = False, indirect: bool = False,
                 secret_values: bool = False, metavar: str = "NAME=VALUE") -> None:
        self.path, self.indirect, self.secret_values = path, indirect, secret_values
        self.metavar = metavar

    def coerce(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"give a table of names to values, got {type(value).__name__}")
        if self.path:
            return {str(k): v for k, v in value.items()}
        return {str(k): _option_text(v) for k, v in value.items()}

    def from_text(self, text: str) -> Any:
        found: dict[str, str] = {}
        for entry in _split(text):
            found.update(self.from_flag(entry))
        return found

    def from_flag(self, text: str) -> Any:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            # Not echoed: what was typed may be a secret.
            raise ValueError(f"give {self.metavar} (comma-separated in a variable)")
        return {key.strip(): value.strip()}

    def from_file(self, value: Any, context: FileContext) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError("give a table of names to values")
        found: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(item, (str, bool, int, float)):
                raise ValueError(f"{key}: give a string, number or boolean")
            if self.indirect and key.endswith("_env"):
                found[key.removesuffix("_env")] = context.variable(item, key)
            else:
                found[key] = context.path(item) if self.path else item
        return found

    def combine(self, lower: Any, higher: Any) -> Any:
        return {**lower, **higher}

    def _masked(self, value: Mapping[str, Any]) -> dict[str, Any]:
        return {k: MASK if self.secret_values and _SECRET_OPTION.search(k) else v
                for k, v in sorted(value.items())}

    def show(self, value: Any, secret: bool) -> str:
        return _toml(self._masked(value))

    def masked_repr(self, value: Any, secret: bool) -> str:
        if self.secret_values:  # names only: even a region can say too much in a log
            return f"<{', '.join(sorted(value)) or 'none'}>"
        return repr(dict(value))


def _option_text(value: object) -> str:
    """A storage option's value as Lance and obstore take it: ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Credentials(Kind):
    """Secrets mapped to their scopes (``{"read_only": true, "namespace": ..., "name":
    ...}``): comma-separated full-access secrets in a variable or one per flag,
    ``[[api_keys]]`` entries (``key`` or ``key_env``) in the file. Sources add up, and a
    secret that a lower source scopes keeps its scope: a flag never widens a key."""

    repeatable = True

    def __init__(self, member: str, label: str, metavar: str) -> None:
        self.member, self.label, self.metavar = member, label, metavar

    def coerce(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): dict(v or {}) for k, v in value.items()}
        if isinstance(value, (str, bytes)):
            raise TypeError("Give credentials as a list or a dict of secrets, "
                            "not a single string")
        if isinstance(value, Iterable):
            return {str(k): {} for k in value}
        raise TypeError(f"Credentials must be a list or a dict, got {type(value).__name__}")

    def from_text(self, text: str) -> Any:
        return {secret: {} for secret in _split(text)}

    def from_flag(self, text: str) -> Any:
        return {text.strip(): {}} if text.strip() else {}

    def from_file(self, value: Any, context: FileContext) -> Any:
        kind = self.member
        if not isinstance(value, list):
            raise ValueError(f"give an array of tables: [[{kind}s]]")
        found: dict[str, dict[str, Any]] = {}
        for number, entry in enumerate(value, start=1):
            if not isinstance(entry, dict):
                raise ValueError(f"entry #{number} must be a table")
            if kind in entry:
                secret = entry[kind]
            elif f"{kind}_env" in entry:
                secret = context.variable(entry[f"{kind}_env"], f"entry #{number}")
            else:
                raise ValueError(f"entry #{number}: give {kind} or {kind}_env")
            if not isinstance(secret, str) or not secret.strip():
                raise ValueError(f"entry #{number}: the {kind} must be a non-empty string")
            found[secret.strip()] = {k: v for k, v in entry.items()
                                     if k not in (kind, f"{kind}_env")}
        return found

    def combine(self, lower: Any, higher: Any) -> Any:
        merged = dict(lower)
        for secret, scope in higher.items():
            merged.setdefault(secret, {**scope, "name": scope.get("name") or
                                       f"{self.label} #{len(merged) + 1}"})
        return merged

    def show(self, value: Any, secret: bool) -> str:
        names = [str(scope.get("name") or "unnamed") for scope in value.values()]
        return _toml([f"{MASK} ({name})" for name in names])

    def masked_repr(self, value: Any, secret: bool) -> str:
        return f"<{len(value)} configured>"


class Table(Kind):
    """A TOML table, JSON text in a variable or flag; members named in ``secrets`` are
    masked, members named in ``paths`` are relative to the config file."""

    metavar = "JSON"

    def __init__(self, *, secrets: tuple[str, ...] = (), paths: tuple[str, ...] = ()) -> None:
        self.secrets, self.paths = secrets, paths

    def coerce(self, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValueError(f"give a table, got {type(value).__name__}")
        return dict(value)

    def from_text(self, text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise ValueError('give a JSON object, e.g. {"audience": "nsframe", ...}')
        return value

    def from_file(self, value: Any, context: FileContext) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError("give a table")
        return {k: context.path(v) if k in self.paths else v for k, v in value.items()}

    def show(self, value: Any, secret: bool) -> str:
        if not value:
            return _toml({})
        return _toml({k: MASK if k in self.secrets else v for k, v in value.items()})

    def masked_repr(self, value: Any, secret: bool) -> str:
        return "<configured>" if value else "None"


@dataclass(frozen=True)
class Setting:
    """One setting's declaration (the metadata of its field); `name` defaults to the
    field's, and the flag, variable and file key derive from `name`."""

    help: str
    kind: Kind
    secret: bool = False
    name: str = ""
    field: str = ""
    flag: str = ""
    aliases: tuple[str, ...] = ()  # other keys the file accepts
    group: str = ""  # a table of the file: "limits" for `Limits`' fields
    default_text: str = ""  # the default as the docs show it, when repr is not right

    @property
    def file_key(self) -> str:
        return f"{self.group}.{self.name}" if self.group else self.name

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


def setting(default: Any = dataclasses.MISSING, *, help: str, kind: Kind,
            factory: Callable[[], Any] | None = None, secret: bool = False,
            name: str = "", flag: str = "", aliases: tuple[str, ...] = (),
            default_text: str = "") -> Any:
    """A dataclass field declared as a server setting (see the module's docstring)."""
    declared = Setting(help=help, kind=kind, secret=secret, name=name, flag=flag,
                       aliases=aliases, default_text=default_text)
    metadata = {"setting": declared}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared(cls: type, group: str = "") -> list[Setting]:
    """The settings of a dataclass, in field order, with their names filled in."""
    found = []
    for item in dataclasses.fields(cls):
        declaration = item.metadata.get("setting")
        if isinstance(declaration, Setting):
            found.append(dataclasses.replace(declaration, field=item.name,
                                             name=declaration.name or item.name,
                                             group=group))
    return found


def check_fields(instance: Any) -> None:
    """Coerce every declared field of ``instance`` (a `__post_init__`'s work), naming
    the setting that is wrong."""
    for item in declared(type(instance)):
        try:
            value = item.kind.coerce(getattr(instance, item.field))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{item.name}: {exc}") from None
        object.__setattr__(instance, item.field, value)


def masked_repr(instance: Any, extra: Iterable[tuple[str, str]] = ()) -> str:
    """``Class(name=value, ...)`` of the declared fields, secrets masked."""
    parts = [f"{item.field}={item.kind.masked_repr(getattr(instance, item.field), item.secret)}"
             for item in declared(type(instance))]
    return f"{type(instance).__name__}({', '.join([*parts, *(f'{k}={v}' for k, v in extra)])})"
