"""Request models: every operation declares one, and `decode` fills it before the handler runs.

A model is a `msgspec.Struct` subclass of `Envelope`: the members of the JSON body, typed,
with defaults. ``QUERY`` names the members a client may also send as query parameters
(upstream clients send GET requests, and operations without a JSON body carry their
parameters there). A member given both ways must say the same thing in both.

Members the model does not declare are ignored, as upstream clients send some we do not
use. Every refusal is an `InvalidInputError` (400, code 13) whose detail names the member
by its path and says what is allowed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import msgspec
import msgspec.inspect as mi

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import dec_hook, shown
from nsframe.server._http.names import Identifier, members
from nsframe.server._limits import Limits

M = TypeVar("M", bound="Envelope")

# A JSON escape of a UTF-16 surrogate; may also match an escaped backslash before
# "ud8..", which only costs a wrong guess at why a body did not parse.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# msgspec's messages end with the member's path: "Expected `int`, got `str` - at `$.k`".
_AT = re.compile(r"(?P<what>.*?)(?: - at `\$(?P<path>.*)`)?", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>.*)`")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<name>.*)`")
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


class Identity(msgspec.Struct, kw_only=True):
    """Credentials a body may carry; `_security.auth` reads them before routing."""

    api_key: str | None = None
    auth_token: str | None = None


class Envelope(msgspec.Struct, kw_only=True):
    """The members every JSON body may carry (spec/SEED_SPEC.md's request envelope)."""

    # Checked against the path id by `endpoint`: a different one is a 400.
    id: Identifier | None = None
    # Values of any type, as clients send them; each becomes a string.
    context: dict[str, Any] | None = None
    identity: Identity | None = None

    QUERY: ClassVar[tuple[str, ...]] = ()

    def check_limits(self, limits: Limits) -> None:
        """The checks that depend on the server's configured `Limits` (`endpoint` calls
        this once the model is decoded): none for most operations."""


def decode(model: type[M], raw: bytes, params: Mapping[str, str]) -> M:
    """``model`` filled from the JSON body ``raw`` (empty is ``{}``) and the query string."""
    given = {name: value for name in model.QUERY if (value := params.get(name))}
    try:
        if not given:
            # The common case, and a query's: bytes straight into the typed model.
            return _decoder(model).decode(raw if raw.strip() else b"{}")
        return _merged(model, raw, given)
    except msgspec.ValidationError as exc:
        raise _invalid(model, str(exc), lambda: _parsed(raw, given), set(given)) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _not_json(raw, exc) from None
    except RecursionError:
        raise InvalidInputError("The JSON body nests too deeply to read: flatten it.") from None


_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def prepare(model: type[Envelope]) -> None:
    """Build ``model``'s decoder now: a model msgspec cannot use fails at start-up, and so
    does one whose names (`_http.names`) cannot be read from its type hints."""
    _decoder(model)
    _query_forms(model)
    members(model)


def _decoder(model: type[M]) -> msgspec.json.Decoder[M]:
    found = _decoders.get(model)
    if found is None:
        found = _decoders[model] = msgspec.json.Decoder(model, dec_hook=dec_hook)
    return found


def _merged(model: type[M], raw: bytes, given: dict[str, str]) -> M:
    """The body's members with the query parameters', checked as one object."""
    body: Any = msgspec.json.decode(raw) if raw.strip() else {}
    if not isinstance(body, dict):
        raise msgspec.ValidationError(f"Expected `object`, got `{type(body).__name__}`")
    forms = _query_forms(model)
    for name, text in given.items():
        value = forms[name](text)
        sent = body.get(name)
        if sent is not None and sent != "" and sent != value:
            raise InvalidInputError(
                f"The member {name!r} is {shown(sent)} in the body but {shown(value)} in the "
                "query string: send it once, or the same in both."
            )
        body[name] = value
    return msgspec.convert(body, model, dec_hook=dec_hook)


# --------------------------------------------------------------- query parameters
_query_form_cache: dict[type, dict[str, Callable[[str], object]]] = {}


def _query_forms(model: type[Envelope]) -> dict[str, Callable[[str], object]]:
    """How each query parameter's text becomes a JSON value, from the member's type.

    Text that does not convert is passed on as it is: the model then refuses it, naming
    the parameter and what is allowed, as it would for the body.
    """
    forms = _query_form_cache.get(model)
    if forms is None:
        info = mi.type_info(model)
        assert isinstance(info, mi.StructType)
        types = {f.encode_name: f.type for f in info.fields}
        forms = _query_form_cache[model] = {name: _form(types[name]) for name in model.QUERY}
    return forms


def _form(kind: mi.Type) -> Callable[[str], object]:
    kinds = kind.types if isinstance(kind, mi.UnionType) else (kind,)
    for k in kinds:
        if isinstance(k, mi.IntType) or (isinstance(k, mi.CustomType) and issubclass(k.cls, int)):
            return _int_text
        if isinstance(k, mi.BoolType):
            return _bool_text
        if isinstance(k, (mi.DictType, mi.StructType, mi.ListType)):
            return _json_text
    return str


def _int_text(text: str) -> object:
    try:
        return int(text)
    except ValueError:
        return text


def _bool_text(text: str) -> object:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    return text


def _json_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


# ------------------------------------------------------------------------- errors
def _parsed(raw: bytes, given: dict[str, str]) -> object:
    """The request as JSON values, to quote what a refused member holds (errors only)."""
    try:
        body = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return None
    if isinstance(body, dict):
        body.update(given)
    return body


def _invalid(model: type[Envelope], message: str, sent: Callable[[], object],
             from_query: set[str]) -> InvalidInputError:
    match = _AT.fullmatch(message)
    assert match is not None  # the pattern matches any text
    what, path = match["what"], match["path"] or ""
    segments = [name or index for name, index in _SEGMENT.findall(path)]
    if "..." in segments:
        # msgspec does not say which key of a map holds the wrong value: name the map.
        segments = segments[:segments.index("...")]
    missing = _MISSING.fullmatch(what)
    if missing:
        segments.append(missing["name"])
    if not segments:
        return InvalidInputError(
            f"The body must be a JSON object, got {_json_kind(sent())}: wrap members in {{}}."
            if what.startswith("Expected `object`") else f"The body is not valid: {what}."
        )
    unknown = _UNKNOWN.fullmatch(what)
    if unknown:
        parent = _member_type(model, segments)
        structs = parent.types if isinstance(parent, mi.UnionType) else (parent,)
        known = [f.encode_name for k in structs if isinstance(k, mi.StructType)
                 for f in k.fields]
        return InvalidInputError(
            f"The member {_member_name(segments)!r} has no member {unknown['name']!r}: use "
            f"{', '.join(known)}."
        )
    member = _member_name(segments)
    where = "query parameter" if len(segments) == 1 and segments[0] in from_query else "member"
    allowed = _describe(_member_type(model, segments))
    if missing:
        return InvalidInputError(f"The {where} {member!r} is required: give {allowed}.")
    if what.startswith("Expected `"):
        got = _value_at(sent(), segments)
        return InvalidInputError(f"The {where} {member!r} must be {allowed}, got {got}.")
    if what == "Number out of range":
        return InvalidInputError(
            f"The {where} {member!r} is out of range: send {allowed} within ±1.7e308."
        )
    if what == "Integer value out of range":
        return InvalidInputError(
            f"The {where} {member!r} holds an integer too large for 64 bits: send integers "
            "from -2^63 to 2^64 - 1."
        )
    # Our own words, from a field type or a model's check: "must be ..., got ...".
    return InvalidInputError(f"The {where} {member!r} {what}.")


def _not_json(raw: bytes, exc: Exception) -> InvalidInputError:
    if _SURROGATE_ESCAPE.search(raw) and _lone_surrogate(raw):
        # JSON may spell lone surrogates ("\ud800"), which can be neither stored nor sent
        # back; msgspec refuses them, with a message that does not say so.
        return InvalidInputError(
            "The body holds a lone UTF-16 surrogate (\\ud800-\\udfff) in a string: send "
            "valid Unicode."
        )
    return InvalidInputError(f"The body is not valid JSON: {exc}. Send a JSON object.")


def _lone_surrogate(raw: bytes) -> bool:
    try:
        json.dumps(json.loads(raw), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):
        pass
    return False


def _member_name(segments: list[str]) -> str:
    text = ""
    for segment in segments:
        if segment.isdigit():
            text += f"[{segment}]"
        elif segment != "...":
            text += f".{segment}" if text else segment
    return text


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "an array"}
    return names.get(type(value), type(value).__name__)


def _value_at(value: object, segments: list[str]) -> str:
    for segment in segments:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return "something else"
    return shown(value)


def _member_type(model: type[Envelope], segments: list[str]) -> mi.Type | None:
    kind: mi.Type | None = mi.type_info(model)
    for segment in segments:
        kind = _step(kind, segment)
    return kind


def _step(kind: mi.Type | None, segment: str) -> mi.Type | None:
    for k in kind.types if isinstance(kind, mi.UnionType) else (kind,):
        if isinstance(k, mi.StructType) and not segment.isdigit() and segment != "...":
            return next((f.type for f in k.fields if f.encode_name == segment), None)
        if isinstance(k, mi.ListType) and segment.isdigit():
            return k.item_type
        if isinstance(k, mi.DictType) and segment == "...":
            return k.value_type
    return None


def _describe(kind: mi.Type | None) -> str:
    """What a member of type ``kind`` may hold, in words."""
    if isinstance(kind, mi.Metadata):  # e.g. `expressions.Sql`: a string like any other
        return _describe(kind.type)
    if isinstance(kind, mi.UnionType):
        parts = [_describe(k) for k in kind.types if not isinstance(k, mi.NoneType)]
        return " or ".join(dict.fromkeys(parts))
    if isinstance(kind, mi.CustomType):
        describe = getattr(kind.cls, "describe", None)
        return str(describe()) if describe is not None else kind.cls.__name__
    if isinstance(kind, mi.IntType):
        return "an integer" + (f" >= {kind.ge}" if kind.ge is not None else "")
    if isinstance(kind, mi.FloatType):
        return "a number" + (f" >= {kind.ge}" if kind.ge is not None else "")
    if isinstance(kind, mi.StrType):
        return "a non-empty string" if kind.min_length else "a string"
    if isinstance(kind, mi.BoolType):
        return "true or false"
    if isinstance(kind, mi.ListType):
        if isinstance(kind.item_type, (mi.UnionType, mi.AnyType)):
            return "an array"
        item = _describe(kind.item_type)
        return f"an array of {_plural(item)}" + (" (not empty)" if kind.min_length else "")
    if isinstance(kind, mi.DictType):
        if isinstance(kind.value_type, (mi.UnionType, mi.AnyType)):
            return "a JSON object"
        return f"a JSON object of {_plural(_describe(kind.value_type))}"
    if isinstance(kind, mi.StructType):
        return "a JSON object"
    if isinstance(kind, mi.AnyType):
        return "any JSON value"
    return "a valid value"


_NOUNS = ("integer", "number", "string", "object", "array", "value")


def _plural(description: str) -> str:
    """"an integer >= 0" -> "integers >= 0", "a JSON object" -> "JSON objects"."""
    words = description.split(" ")
    if words[0] in ("a", "an"):
        words = words[1:]
    for i, word in enumerate(words):
        if word in _NOUNS:
            words[i] = word + "s"
            return " ".join(words)
    return description
