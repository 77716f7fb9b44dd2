"""Arrow schemas on the wire: as JSON (upstream's ``JsonArrowSchema``) and as IPC bytes.

The Lance ecosystem has two JSON spellings of one schema, and each client reads only its own:

- **namespace** (`schema_to_json`): the Lance Namespace spelling, what lance-namespace's
  ``arrow_type_to_json`` writes and pylance's reference server (``RestAdapter``) answers
  in describe: ``utf8``, ``large_utf8``, ``float32``, ``float64``, ``timestamp`` (no unit),
  ``decimal128`` with ``length = precision * 1000 + scale``. lance-namespace's reader
  knows no other names.
- **lance** (`schema_to_lance_json`): Lance's own ``JsonSchema`` (``lance.schema.schema_to_json``),
  which LanceDB's remote client parses: ``string``, ``large_string``, ``float``,
  ``double``, ``halffloat``, ``date32:day``, ``timestamp:us:UTC``, ``decimal:128:10:2``,
  ``dict:string:int32:false``. It keeps every detail; it rejects the namespace names.

The server writes the namespace spelling to namespace clients and Lance's to LanceDB's
remote client (`_http.dialect`); both describes also carry ``arrow_schema`` (the exact
schema, IPC bytes in base64), which nsframe's client reads first. The reader here,
`schema_from_json`, reads both spellings and the names other servers use.

The namespace spelling leaves some details out, and those types read back as the default of
their kind: timestamps lose unit and time zone (read back as ``timestamp[us]``), times and
durations their unit (``time32[ms]``, ``time64[us]``, ``duration[us]``), a dictionary is
written as its value type, a view as its plain type.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pyarrow as pa

Spelling = Callable[[pa.DataType], dict[str, Any]]

# Namespace spelling: Arrow type -> name (lance-namespace's `arrow_type_to_json`).
TYPE_NAMES: dict[pa.DataType, str] = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.int16(): "int16",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.uint8(): "uint8",
    pa.uint16(): "uint16",
    pa.uint32(): "uint32",
    pa.uint64(): "uint64",
    pa.float16(): "float16",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.string(): "utf8",
    pa.large_string(): "large_utf8",
    pa.string_view(): "utf8",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.binary_view(): "binary",
    pa.date32(): "date32",
    pa.date64(): "date64",
}

# Lance spelling of the types that have one name (Lance's `LogicalType`).
LANCE_NAMES: dict[pa.DataType, str] = {
    **{t: n for t, n in TYPE_NAMES.items() if n.startswith(("null", "bool", "int", "uint"))},
    pa.float16(): "halffloat",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
    pa.large_string(): "large_string",
    pa.string_view(): "string",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.binary_view(): "binary",
    pa.date32(): "date32:day",
    pa.date64(): "date64:ms",
}

# Types the namespace spelling writes by kind alone (no unit, no zone): the name, how to
# recognise the kind, and the type the name reads back as.
KINDS: tuple[tuple[str, Callable[[pa.DataType], bool], pa.DataType], ...] = (
    ("timestamp", pa.types.is_timestamp, pa.timestamp("us")),
    ("time32", pa.types.is_time32, pa.time32("ms")),
    ("time64", pa.types.is_time64, pa.time64("us")),
    ("duration", pa.types.is_duration, pa.duration("us")),
)

DECIMALS: dict[int, Callable[[int, int], pa.DataType]] = {128: pa.decimal128, 256: pa.decimal256}

# Names other writers use, read as these types.
READ_ALIASES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "string_view": pa.string_view(),
    "binary_view": pa.binary_view(),
}

_BY_NAME: dict[str, pa.DataType] = {
    **{name: default for name, _, default in KINDS},
    # The plain types win over their views, which both spellings write as them.
    **{n: t for t, n in TYPE_NAMES.items() if not pa.types.is_binary_view(t)
       and not pa.types.is_string_view(t)},
    **{n: t for t, n in LANCE_NAMES.items() if not pa.types.is_binary_view(t)
       and not pa.types.is_string_view(t)},
    **READ_ALIASES,
}


# ---------------------------------------------------------------------- writing
def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """The namespace spelling of ``schema`` (what pylance's reference server answers)."""
    return _schema(schema, _namespace_type)


def schema_to_lance_json(schema: pa.Schema) -> dict[str, Any]:
    """Lance's own JSON of ``schema`` (``lance.schema.schema_to_json``), for LanceDB."""
    return _schema(schema, _lance_type)


def _schema(schema: pa.Schema, spell: Spelling) -> dict[str, Any]:
    out: dict[str, Any] = {"fields": [_field(f, spell) for f in schema]}
    metadata = _text_map(schema.metadata)
    if metadata:
        out["metadata"] = metadata
    return out


def _text_map(raw: dict[bytes, bytes] | None) -> dict[str, str]:
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in (raw or {}).items()}


def _field(field: pa.Field, spell: Spelling) -> dict[str, Any]:
    out = {"name": field.name, "nullable": field.nullable, "type": spell(field.type)}
    metadata = _text_map(field.metadata)
    if metadata:
        out["metadata"] = metadata
    return out


def _nested(t: pa.DataType, spell: Spelling) -> dict[str, Any] | None:
    """Lists and structs, spelt alike in both: their children in ``spell``."""
    if pa.types.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "length": t.list_size,
                "fields": [_field(t.value_field, spell)]}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        name = "large_list" if pa.types.is_large_list(t) else "list"
        return {"type": name, "fields": [_field(t.value_field, spell)]}
    if pa.types.is_struct(t):
        fields = [_field(t.field(i), spell) for i in range(t.num_fields)]
        return {"type": "struct", "fields": fields}
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return {"type": "fixed_size_binary", "length": t.byte_width}
    return None


def _namespace_type(t: pa.DataType) -> dict[str, Any]:
    nested = _nested(t, _namespace_type)
    if nested is not None:
        return nested
    if pa.types.is_dictionary(t):
        return _namespace_type(t.value_type)
    if t in TYPE_NAMES:
        return {"type": TYPE_NAMES[t]}
    for name, is_kind, _ in KINDS:
        if is_kind(t):
            return {"type": name}
    if pa.types.is_decimal(t):
        return {"type": f"decimal{t.bit_width}", "length": t.precision * 1000 + t.scale}
    # Anything else as pyarrow names it, parameters dropped (no reader knows it).
    return {"type": str(t).split("[")[0].split("<")[0]}


def _lance_type(t: pa.DataType) -> dict[str, Any]:
    nested = _nested(t, _lance_type)
    if nested is not None:
        return nested
    return {"type": _lance_name(t)}


def _lance_name(t: pa.DataType) -> str:
    if t in LANCE_NAMES:
        return LANCE_NAMES[t]
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz or '-'}"
    if pa.types.is_time32(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        kind = "duration" if pa.types.is_duration(t) else f"time{t.bit_width}"
        return f"{kind}:{t.unit}"
    if pa.types.is_decimal(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_dictionary(t):
        return f"dict:{_lance_name(t.value_type)}:{_lance_name(t.index_type)}:false"
    return str(t).split("[")[0].split("<")[0]


def schema_to_base64(schema: pa.Schema) -> str:
    """The exact schema (IPC-serialised, base64), the ``arrow_schema`` of an answer."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


# ---------------------------------------------------------------------- reading
def schema_from_json(data: dict[str, Any]) -> pa.Schema:
    """An Arrow schema from either JSON spelling (or another server's names).

    Raises:
        ValueError: for a type name that is not known, or a list without its item field.
    """
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    return pa.schema([_field_from_json(f) for f in data.get("fields") or []], metadata=metadata)


def _field_from_json(data: dict[str, Any]) -> pa.Field:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    return pa.field(str(data["name"]), type_from_json(data["type"]),
                    nullable=bool(data.get("nullable", True)), metadata=metadata)


def type_from_json(data: dict[str, Any]) -> pa.DataType:
    """The Arrow type of one ``JsonArrowDataType``, in either spelling."""
    text = str(data.get("type", ""))
    # Only the kind is case-insensitive: a time zone ("Europe/Paris") is not.
    head, sep, rest = text.partition(":")
    name, spelled = head.lower(), head.lower() + sep + rest
    children = [_field_from_json(f) for f in data.get("fields") or []]
    if name == "fixed_size_list":
        return pa.list_(_item(children, name), int(data["length"]))
    if name == "list":
        return pa.list_(_item(children, name))
    if name == "large_list":
        return pa.large_list(_item(children, name))
    if name == "struct":
        return pa.struct(children)
    if spelled in _BY_NAME:
        return _BY_NAME[spelled]
    found = _parameterised(name, rest.split(":") if sep else [], data.get("length"))
    if found is None:
        raise ValueError(f"Unknown type {text!r} in the table's JSON schema.")
    return found


def _parameterised(name: str, params: list[str], length: object) -> pa.DataType | None:
    """Types whose parameters are in the name (Lance) or in ``length`` (namespace)."""
    try:
        if name in ("timestamp", "time32", "time64", "duration") and params:
            unit = params[0]
            if name == "timestamp":
                zone = ":".join(params[1:])
                return pa.timestamp(unit, None if zone in ("", "-") else zone)
            return {"time32": pa.time32, "time64": pa.time64, "duration": pa.duration}[name](unit)
        if name == "decimal" and len(params) in (2, 3):
            bits = int(params[0]) if len(params) == 3 else 128
            return DECIMALS[bits](int(params[-2]), int(params[-1]))
        if name.startswith("decimal") and not params:
            return _decimal(name, length)
        if name == "fixed_size_binary":
            width = int(params[0]) if params else int(length)  # type: ignore[call-overload]
            return pa.binary(width)
        if name == "dict" and len(params) >= 3:
            # dict:<value>:<key>:<ordered>; the value type may hold colons itself.
            value = type_from_json({"type": ":".join(params[:-2])})
            return pa.dictionary(type_from_json({"type": params[-2]}), value)
    except (ValueError, TypeError, KeyError, pa.ArrowInvalid) as exc:
        raise ValueError(f"Cannot read the type {name!r} with {params or length!r}: {exc}") \
            from None
    return None


def _decimal(name: str, length: object) -> pa.DataType | None:
    """``decimal128`` with ``length = precision * 1000 + scale`` (a negative scale is
    ``-128..-1``), or the old ``decimal128(10, 2)``."""
    if "(" in name:
        kind, _, args = name.partition("(")
        precision, scale = (int(x) for x in args.rstrip(")").split(","))
        return DECIMALS[int(kind[len("decimal"):])](precision, scale)
    bits = int(name[len("decimal"):]) if name[len("decimal"):].isdigit() else 0
    if bits not in DECIMALS or not isinstance(length, int):
        return None
    precision = (length + 128) // 1000
    return DECIMALS[bits](precision, length - precision * 1000)


def _item(children: list[pa.Field], name: str) -> pa.Field:
    if len(children) != 1:
        raise ValueError(f"A {name} in the table's JSON schema needs exactly one item field, "
                         f"got {len(children)}.")
    return children[0]


def schema_from_base64(encoded: str) -> pa.Schema:
    """The exact schema from an answer's ``arrow_schema``."""
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))
