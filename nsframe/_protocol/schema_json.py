"""Arrow schemas on the wire: as JSON (upstream's ``JsonArrowSchema``) and as IPC bytes.

The server writes both forms in a describe answer (``schema`` and ``arrow_schema``);
the client reads ``arrow_schema`` when it is there (exact) and the JSON otherwise.

The JSON spelling is the one the server has always written. It leaves some details out,
and those types read back as the default of their kind:

- timestamps lose unit and time zone (read back as ``timestamp[us]``), times and
  durations their unit (``time32[ms]``, ``time64[us]``, ``duration[us]``);
- a dictionary-encoded column is written as its value type;
- field metadata is not written (schema metadata is);
- types outside the tables below are written as pyarrow names them, without their
  parameters (``fixed_size_binary``), and cannot be read back.

To change the spelling, change `TYPE_NAMES`, `KINDS` and `DECIMALS`: both directions
follow them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

# The type names, written and read: Arrow type -> its name in the JSON.
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
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.date32(): "date32",
    pa.date64(): "date64",
}

# Types written by kind alone (no unit, no zone): the name, how to recognise the kind,
# and the type the name reads back as.
KINDS: tuple[tuple[str, Callable[[pa.DataType], bool], pa.DataType], ...] = (
    ("timestamp", pa.types.is_timestamp, pa.timestamp("us")),
    ("time32", pa.types.is_time32, pa.time32("ms")),
    ("time64", pa.types.is_time64, pa.time64("us")),
    ("duration", pa.types.is_duration, pa.duration("us")),
)

# Decimals keep precision and scale: "decimal128(10, 2)".
DECIMALS: dict[str, Callable[[int, int], pa.DataType]] = {
    "decimal128": pa.decimal128,
    "decimal256": pa.decimal256,
}
_DECIMAL = re.compile(r"(decimal\d+)\((\d+),\s*(\d+)\)")

# Other names a reader meets: pyarrow's own and other servers' spellings.
READ_ALIASES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "float": pa.float32(),
    "double": pa.float64(),
    "halffloat": pa.float16(),
}

_BY_NAME: dict[str, pa.DataType] = {
    **READ_ALIASES,
    **{name: default for name, _, default in KINDS},
    **{name: arrow for arrow, name in TYPE_NAMES.items()},
}


# ---------------------------------------------------------------------- writing
def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """The ``JsonArrowSchema`` form of ``schema``."""
    out: dict[str, Any] = {"fields": [_field_to_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {
            k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in schema.metadata.items()
        }
    return out


def _field_to_json(field: pa.Field) -> dict[str, Any]:
    return {"name": field.name, "nullable": field.nullable, "type": _type_to_json(field.type)}


def _type_to_json(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_fixed_size_list(t):
        return {
            "type": "fixed_size_list",
            "length": t.list_size,
            "fields": [_field_to_json(t.value_field)],
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        name = "large_list" if pa.types.is_large_list(t) else "list"
        return {"type": name, "fields": [_field_to_json(t.value_field)]}
    if pa.types.is_struct(t):
        return {
            "type": "struct",
            "fields": [_field_to_json(t.field(i)) for i in range(t.num_fields)],
        }
    if pa.types.is_dictionary(t):
        return _type_to_json(t.value_type)
    return {"type": _type_name(t)}


def _type_name(t: pa.DataType) -> str:
    if t in TYPE_NAMES:
        return TYPE_NAMES[t]
    for name, is_kind, _ in KINDS:
        if is_kind(t):
            return name
    text = str(t)
    if pa.types.is_decimal(t) and text.split("(")[0] in DECIMALS:
        return f"{text.split('(')[0]}({t.precision}, {t.scale})"
    # Anything else as pyarrow names it, parameters dropped: what the server has
    # always written for types no reader here knows.
    return text.split("[")[0]


def schema_to_base64(schema: pa.Schema) -> str:
    """The exact schema (IPC-serialised, base64), the ``arrow_schema`` of an answer."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


# ---------------------------------------------------------------------- reading
def schema_from_json(data: dict[str, Any]) -> pa.Schema:
    """An Arrow schema from its ``JsonArrowSchema`` form.

    Raises:
        ValueError: for a type name that is not known, or a list without its item field.
    """
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    return pa.schema([_field_from_json(f) for f in data.get("fields") or []], metadata=metadata)


def _field_from_json(data: dict[str, Any]) -> pa.Field:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    return pa.field(str(data["name"]), _type_from_json(data["type"]),
                    nullable=bool(data.get("nullable", True)), metadata=metadata)


def _type_from_json(data: dict[str, Any]) -> pa.DataType:
    name = str(data.get("type", "")).lower()
    children = [_field_from_json(f) for f in data.get("fields") or []]
    if name == "fixed_size_list":
        return pa.list_(_item(children, name), int(data["length"]))
    if name == "list":
        return pa.list_(_item(children, name))
    if name == "large_list":
        return pa.large_list(_item(children, name))
    if name == "struct":
        return pa.struct(children)
    if name in _BY_NAME:
        return _BY_NAME[name]
    decimal = _DECIMAL.fullmatch(name)
    if decimal is not None and decimal.group(1) in DECIMALS:
        return DECIMALS[decimal.group(1)](int(decimal.group(2)), int(decimal.group(3)))
    raise ValueError(f"Unknown type {name!r} in the table's JSON schema.")


def _item(children: list[pa.Field], name: str) -> pa.Field:
    if len(children) != 1:
        raise ValueError(f"A {name} in the table's JSON schema needs exactly one item field, "
                         f"got {len(children)}.")
    return children[0]


def schema_from_base64(encoded: str) -> pa.Schema:
    """The exact schema from an answer's ``arrow_schema``."""
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))
