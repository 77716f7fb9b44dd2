"""Arrow schemas as JSON: the spelling the server writes, and what the client reads back.

`EXACT` types come back as they were. `LOSSY` types lose what today's spelling leaves
out (units, time zones, dictionary encoding); when a later spelling keeps them, move
them to `EXACT`.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from nsframe._protocol.schema_json import (
    schema_from_base64,
    schema_from_json,
    schema_to_base64,
    schema_to_json,
)

TIME_UNITS = ("s", "ms", "us", "ns")
FLOATS = (pa.float16(), pa.float32(), pa.float64())

EXACT: list[pa.DataType] = [
    pa.null(), pa.bool_(),
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    *FLOATS,
    pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
    pa.date32(), pa.date64(),
    pa.timestamp("us"), pa.time32("ms"), pa.time64("us"), pa.duration("us"),
    pa.decimal128(10, 2), pa.decimal128(38, 0), pa.decimal256(40, 3),
    pa.list_(pa.int32()), pa.large_list(pa.string()),
    pa.list_(pa.field("item", pa.int64(), nullable=False)),
    *(pa.list_(t, 8) for t in FLOATS),  # vectors
    pa.list_(pa.list_(pa.float32(), 4)),  # multivectors
    pa.struct([
        pa.field("a", pa.int32(), nullable=False),
        pa.field("b", pa.struct([("c", pa.list_(pa.string())), ("d", pa.float64())])),
    ]),
]

# type -> what today's spelling reads back as.
LOSSY: list[tuple[pa.DataType, pa.DataType]] = [
    *((pa.timestamp(u), pa.timestamp("us")) for u in TIME_UNITS if u != "us"),
    *((pa.timestamp(u, tz), pa.timestamp("us"))
      for u in TIME_UNITS for tz in ("UTC", "Europe/Paris")),
    (pa.time32("s"), pa.time32("ms")),
    (pa.time64("ns"), pa.time64("us")),
    *((pa.duration(u), pa.duration("us")) for u in TIME_UNITS if u != "us"),
    (pa.dictionary(pa.int32(), pa.string()), pa.string()),
    (pa.dictionary(pa.int8(), pa.large_string()), pa.large_string()),
    (pa.struct([("t", pa.timestamp("ns", "UTC"))]), pa.struct([("t", pa.timestamp("us"))])),
]


def round_trip(schema: pa.Schema) -> pa.Schema:
    return schema_from_json(schema_to_json(schema))


@pytest.mark.parametrize(("arrow_type", "nullable"), [
    pytest.param(t, nullable, id=f"{t}-{'nullable' if nullable else 'required'}")
    for t in EXACT for nullable in (True, False)
    if nullable or not pa.types.is_null(t)  # a null column is always nullable
])
def test_exact_types_round_trip(arrow_type: pa.DataType, nullable: bool) -> None:
    schema = pa.schema([pa.field("c", arrow_type, nullable=nullable)])
    assert round_trip(schema).equals(schema, check_metadata=True)


@pytest.mark.parametrize(("arrow_type", "read_back"), LOSSY, ids=lambda t: str(t))
def test_lossy_types_read_back_as_their_kind(arrow_type: pa.DataType,
                                             read_back: pa.DataType) -> None:
    schema = pa.schema([pa.field("c", arrow_type)])
    assert round_trip(schema).field("c").type == read_back


def test_a_schema_of_every_type_round_trips_with_its_metadata() -> None:
    fields = [pa.field(f"c{i}", t, nullable=i % 2 == 0 or pa.types.is_null(t))
              for i, t in enumerate(EXACT)]
    schema = pa.schema(fields, metadata={"owner": "ana", "note": "ü"})
    assert round_trip(schema).equals(schema, check_metadata=True)


def test_field_metadata_is_written_and_read() -> None:
    schema = pa.schema([pa.field("c", pa.int32(), metadata={"unit": "m"})])
    written = schema_to_json(schema)
    assert written["fields"][0]["metadata"] == {"unit": "m"}
    assert round_trip(schema).field("c").metadata == {b"unit": b"m"}


# The namespace spelling, type by type: what pylance's reference server writes
# (tests/server/test_schema_spelling.py checks it against the server itself).
SPELLING: list[tuple[pa.DataType, dict[str, Any]]] = [
    (pa.bool_(), {"type": "bool"}),
    (pa.int8(), {"type": "int8"}),
    (pa.uint64(), {"type": "uint64"}),
    (pa.float16(), {"type": "float16"}),
    (pa.float32(), {"type": "float32"}),
    (pa.float64(), {"type": "float64"}),
    (pa.string(), {"type": "utf8"}),
    (pa.large_string(), {"type": "large_utf8"}),
    (pa.binary(), {"type": "binary"}),
    (pa.large_binary(), {"type": "large_binary"}),
    (pa.date32(), {"type": "date32"}),
    (pa.date64(), {"type": "date64"}),
    (pa.time32("s"), {"type": "time32"}),
    (pa.time64("ns"), {"type": "time64"}),
    (pa.timestamp("ns", "UTC"), {"type": "timestamp"}),
    (pa.duration("ms"), {"type": "duration"}),
    (pa.decimal128(10, 2), {"type": "decimal128", "length": 10002}),
    (pa.decimal256(40, 3), {"type": "decimal256", "length": 40003}),
    (pa.dictionary(pa.int32(), pa.string()), {"type": "utf8"}),
    (pa.binary(16), {"type": "fixed_size_binary", "length": 16}),
    (pa.list_(pa.float32(), 3), {"type": "fixed_size_list", "length": 3, "fields": [
        {"name": "item", "nullable": True, "type": {"type": "float32"}}]}),
    (pa.large_list(pa.int8()), {"type": "large_list", "fields": [
        {"name": "item", "nullable": True, "type": {"type": "int8"}}]}),
    (pa.struct([pa.field("a", pa.int32(), nullable=False)]), {"type": "struct", "fields": [
        {"name": "a", "nullable": False, "type": {"type": "int32"}}]}),
]


@pytest.mark.parametrize(("arrow_type", "spelled"), SPELLING, ids=lambda t: str(t))
def test_the_spelling_written(arrow_type: pa.DataType, spelled: dict[str, Any]) -> None:
    written = schema_to_json(pa.schema([pa.field("c", arrow_type)]))
    assert written == {"fields": [{"name": "c", "nullable": True, "type": spelled}]}


@pytest.mark.parametrize(("name", "arrow_type"), [
    ("boolean", pa.bool_()), ("string", pa.string()), ("large_string", pa.large_string()),
    ("float", pa.float32()), ("double", pa.float64()), ("halffloat", pa.float16()),
    ("UTF8", pa.string()), ("Decimal128(5, 1)", pa.decimal128(5, 1)),
    # Lance's own spelling (`schema_to_lance_json`), which keeps every detail.
    ("date32:day", pa.date32()), ("date64:ms", pa.date64()),
    ("timestamp:ns:-", pa.timestamp("ns")),
    ("timestamp:us:Europe/Paris", pa.timestamp("us", "Europe/Paris")),
    ("timestamp:s:+01:00", pa.timestamp("s", "+01:00")),
    ("time32:s", pa.time32("s")), ("time64:ns", pa.time64("ns")),
    ("duration:ms", pa.duration("ms")),
    ("decimal:128:10:2", pa.decimal128(10, 2)), ("decimal:256:40:5", pa.decimal256(40, 5)),
    ("dict:string:int32:false", pa.dictionary(pa.int32(), pa.string())),
    ("fixed_size_binary:16", pa.binary(16)),
])
def test_other_spellings_are_read(name: str, arrow_type: pa.DataType) -> None:
    data = {"fields": [{"name": "c", "type": {"type": name}}]}
    assert schema_from_json(data).field("c").type == arrow_type


def test_decimals_keep_a_negative_scale() -> None:
    data = {"fields": [{"name": "c", "type": {"type": "decimal128", "length": 9998}}]}
    assert schema_from_json(data).field("c").type == pa.decimal128(10, -2)


@pytest.mark.parametrize("type_json", [
    {"type": "fixed_size_binary"},
    {"type": "timestamp:parsecs:-"},
    {"type": "no_such_type"},
    {"type": "list"},
    {"type": "fixed_size_list", "length": 2, "fields": []},
], ids=lambda t: str(t))
def test_what_cannot_be_read_is_a_value_error(type_json: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        schema_from_json({"fields": [{"name": "c", "type": type_json}]})


def test_base64_keeps_every_detail() -> None:
    types = EXACT + [t for t, _ in LOSSY] + [pa.binary(16), pa.map_(pa.string(), pa.int32())]
    fields = [pa.field(f"c{i}", t, metadata={"i": str(i)}) for i, t in enumerate(types)]
    schema = pa.schema(fields, metadata={"owner": "ana"})
    assert schema_from_base64(schema_to_base64(schema)).equals(schema, check_metadata=True)
