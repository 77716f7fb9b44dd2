"""`ServerConfig` from its sources: a TOML file, the environment and `nsframe serve` flags.

File format (every member optional; relative paths are relative to the file)::

    root = "./data"                    # the default database (or "s3://bucket/prefix")
    database_from_host = false
    require_auth = false
    max_json_bytes = "16MiB"
    max_body_bytes = "64GiB"           # Arrow inserts
    allow_hosts = ["nsframe.example.com"]    # Host names besides the loopback ones
    allow_origins = ["https://app.example.com"]  # web pages that may call the server
    log_format = "text"                # or "json": one JSON object per log line

    [limits]                           # see `nsframe.server._limits.Limits`
    query_timeout = 60
    max_k = 10000

    read_consistency_interval = 0      # seconds a read may lag other replicas (0: strong)
    vend_storage_options = false       # describe returns the storage options to readers
    check_conditional_put = true       # refuse a store that ignores If-None-Match

    [databases]                        # picked by x-service-database or the host name;
                                       # each root outside every other database's root
    sales = "/srv/nsframe/sales"

    [storage_options]                  # Lance's names; over the store's environment
    aws_region = "eu-west-1"
    aws_endpoint = "https://s3.example.com"
    aws_secret_access_key_env = "S3_SECRET"   # NAME_env: the value of a variable

    [[api_keys]]                       # repeat for each key
    key = "..."                        # or key_env = "NAME_OF_AN_ENV_VARIABLE"
    name = "dashboard"                 # shown in the access log instead of the key
    read_only = true
    namespace = "sales$eu"             # only this namespace and below
    databases = ["sales"]              # only these databases ("" is the default one)

    [[tokens]]                         # static bearer tokens, same members (token/token_env)
    token_env = "NSFRAME_CI_TOKEN"

    [jwt]                              # OAuth 2.0 access tokens, see `_jwt`
    public_key_file = "issuer.pem"
    audience = "nsframe"

Credentials are never taken from a URL.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nsframe._protocol.defaults import API_KEYS_ENV
from nsframe.server._config import ServerConfig, parse_size
from nsframe.server._limits import Limits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found]

TOP_LEVEL = frozenset({
    "root", "databases", "database_from_host", "require_auth", "max_json_bytes",
    "max_body_bytes", "max_arrow_bytes", "api_keys", "tokens", "jwt",
    "allow_hosts", "allow_origins", "limits", "storage_options",
    "read_consistency_interval", "vend_storage_options", "check_conditional_put",
    "log_format",
})


def _secret(entry: Mapping[str, Any], kind: str, number: int, environ: Mapping[str, str]) -> str:
    if kind in entry:
        value = entry[kind]
    elif f"{kind}_env" in entry:
        variable = str(entry[f"{kind}_env"])
        if variable not in environ:
            raise ValueError(f"{kind}s entry #{number}: the variable {variable} is not set")
        value = environ[variable]
    else:
        raise ValueError(f"{kind}s entry #{number}: give {kind} or {kind}_env")
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{kind}s entry #{number}: the {kind} must be a non-empty string")
    return value.strip()


def _credentials(entries: object, kind: str,
                 environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    if not isinstance(entries, list):
        raise ValueError(f"{kind}s must be an array of tables: [[{kind}s]]")
    found: dict[str, dict[str, Any]] = {}
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ValueError(f"{kind}s entry #{number} must be a table")
        secret = _secret(entry, kind, number, environ)
        found[secret] = {k: v for k, v in entry.items() if k not in (kind, f"{kind}_env")}
    return found


def _path(value: object, base: Path) -> str:
    """A local root relative to the file's folder; a URI (``s3://...``) as it is."""
    text = str(value)
    if "://" in text:
        return text
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else base / path)


def _storage_options(raw: object, environ: Mapping[str, str]) -> dict[str, str]:
    """``[storage_options]``: ``name = "value"``, or ``name_env = "VARIABLE"``."""
    if not isinstance(raw, dict):
        raise ValueError("[storage_options] maps option names to values")
    found: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, (str, bool, int, float)):
            raise ValueError(f"storage option {key}: give a string, number or boolean")
        if key.endswith("_env"):
            variable = str(value)
            if variable not in environ:
                raise ValueError(f"storage option {key}: the variable {variable} is not set")
            found[key.removesuffix("_env")] = environ[variable]
        elif isinstance(value, bool):
            found[key] = "true" if value else "false"
        else:
            found[key] = str(value)
    return found


def load_config_file(path: str | os.PathLike[str],
                     environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Read a TOML server configuration; raises ValueError with what to fix."""
    environ = os.environ if environ is None else environ
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file}: not valid TOML ({exc})") from exc
    unknown = set(raw) - TOP_LEVEL
    if unknown:
        raise ValueError(f"{file}: unknown setting(s) {sorted(unknown)}")
    base = file.parent.resolve()
    options: dict[str, Any] = {}
    if "root" in raw:
        options["root"] = _path(raw["root"], base)
    if "databases" in raw:
        if not isinstance(raw["databases"], dict):
            raise ValueError(f"{file}: [databases] maps names to paths")
        options["databases"] = {str(k): _path(v, base) for k, v in raw["databases"].items()}
    for flag in ("database_from_host", "require_auth", "vend_storage_options",
                 "check_conditional_put"):
        if flag in raw:
            if not isinstance(raw[flag], bool):
                raise ValueError(f"{file}: {flag} must be true or false")
            options[flag] = raw[flag]
    if "max_json_bytes" in raw:
        options["max_json_bytes"] = parse_size(raw["max_json_bytes"])
    for name in ("max_body_bytes", "max_arrow_bytes"):
        if name in raw:
            options["max_arrow_bytes"] = parse_size(raw[name])
    for names in ("allow_hosts", "allow_origins"):
        if names in raw:
            if not isinstance(raw[names], list) or not all(isinstance(n, str)
                                                           for n in raw[names]):
                raise ValueError(f"{file}: {names} must be an array of strings")
            options[names] = list(raw[names])
    if "limits" in raw:
        if not isinstance(raw["limits"], dict):
            raise ValueError(f"{file}: [limits] must be a table")
        options["limits"] = Limits.from_mapping(raw["limits"], f"{file}: [limits]")
    if "storage_options" in raw:
        options["storage_options"] = _storage_options(raw["storage_options"], environ)
    if "read_consistency_interval" in raw:
        interval = raw["read_consistency_interval"]
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval < 0:
            raise ValueError(f"{file}: read_consistency_interval is a number of seconds >= 0")
        options["read_consistency_interval"] = float(interval)
    if "log_format" in raw:
        if raw["log_format"] not in ("text", "json"):
            raise ValueError(f"{file}: log_format is \"text\" or \"json\"")
        options["log_format"] = raw["log_format"]
    if "api_keys" in raw:
        options["api_keys"] = _credentials(raw["api_keys"], "key", environ)
    if "tokens" in raw:
        options["tokens"] = _credentials(raw["tokens"], "token", environ)
    if "jwt" in raw:
        jwt = dict(raw["jwt"])
        if "public_key_file" in jwt:
            jwt["public_key_file"] = _path(jwt["public_key_file"], base)
        options["jwt"] = jwt
    return ServerConfig(**options)


def keys_from_env(environ: Mapping[str, str]) -> list[str]:
    """The full-access API keys of ``NSFRAME_API_KEYS`` (comma-separated)."""
    return [k.strip() for k in environ.get(API_KEYS_ENV, "").split(",") if k.strip()]


def add_keys(config: ServerConfig, keys: Iterable[str]) -> None:
    """Add full-access API keys; a key the file already scopes keeps its scope."""
    for key in keys:
        config.api_keys.setdefault(key, {"name": f"api key #{len(config.api_keys) + 1}"})


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerConfig:
    """The config of `nsframe serve`: ``--config``, then the environment, then the flags."""
    config = (load_config_file(args.config, environ) if args.config
              else ServerConfig())
    if args.root is not None:
        config.root = args.root
    add_keys(config, keys_from_env(environ))
    add_keys(config, args.api_key or [])
    for entry in args.database or []:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"--database takes NAME=PATH, got {entry!r}")
        config.databases[name.strip()] = path.strip()
    if args.database_from_host:
        config.database_from_host = True
    if args.max_json_bytes is not None:
        config.max_json_bytes = parse_size(args.max_json_bytes)
    if args.max_body_bytes is not None:
        config.max_arrow_bytes = parse_size(args.max_body_bytes)
    config.allow_hosts.extend(args.allow_host or [])
    config.allow_origins.extend(args.allow_origin or [])
    if args.host not in ("0.0.0.0", "::", ""):
        # The bound address is always a name the server answers to.
        config.allow_hosts.append(args.host)
    if args.query_timeout is not None:
        if args.query_timeout <= 0:
            raise ValueError(f"--query-timeout must be above 0, got {args.query_timeout}")
        config.limits = dataclasses.replace(config.limits,
                                            query_timeout=args.query_timeout)
    config.storage_options.update(storage_option_flags(args.storage_option))
    if args.read_consistency_interval is not None:
        if args.read_consistency_interval < 0:
            raise ValueError("--read-consistency-interval takes seconds >= 0")
        config.read_consistency_interval = args.read_consistency_interval
    if args.vend_storage_options:
        config.vend_storage_options = True
    if args.skip_conditional_put_check:
        config.check_conditional_put = False
    if args.log_format is not None:
        config.log_format = args.log_format
    return config


def storage_option_flags(entries: Sequence[str] | None) -> dict[str, str]:
    """``--storage-option KEY=VALUE`` flags as a dict."""
    found: dict[str, str] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            # Not echoed: what was typed may be a secret.
            raise ValueError("--storage-option takes KEY=VALUE")
        found[key.strip()] = value
    return found
