"""Property: any frame of mixed dtypes with nulls, inserted with ``df.ns.insert`` and
read back, is the same frame (pandas and polars, through the real server)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nsframe

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False, width=64)
TEXT = st.text(max_size=8)
DATETIMES = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))
DURATIONS = st.timedeltas(min_value=dt.timedelta(days=-9999), max_value=dt.timedelta(days=9999))
DECIMALS = st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False,
                       allow_infinity=False)
CATS = st.sampled_from(["red", "green", "it's"])


def nullable(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values)


# Each kind: (strategy of one value, how a list of values becomes the column).
Column = tuple[st.SearchStrategy[Any], Callable[[list[Any]], Any]]


def _datetimes(values: list[Any], tz: str | None) -> pd.Series:
    series = pd.Series(values, dtype="datetime64[us]")
    return series if tz is None else series.dt.tz_localize("UTC").dt.tz_convert(tz)


PANDAS: dict[str, Column] = {
    "Int64": (nullable(INT64), lambda v: pd.array(v, dtype="Int64")),
    "Int16": (nullable(st.integers(-(2**15), 2**15 - 1)), lambda v: pd.array(v, dtype="Int16")),
    "UInt8": (nullable(st.integers(0, 255)), lambda v: pd.array(v, dtype="UInt8")),
    "Float64": (nullable(FLOATS), lambda v: pd.array(v, dtype="Float64")),
    "float64": (nullable(FLOATS), lambda v: pd.Series(v, dtype="float64")),
    "boolean": (nullable(st.booleans()), lambda v: pd.array(v, dtype="boolean")),
    "string": (nullable(TEXT), lambda v: pd.array(v, dtype="string")),
    "str": (nullable(TEXT), lambda v: pd.Series(v, dtype="str")),
    "category": (nullable(CATS), lambda v: pd.Categorical(v, categories=["red", "green",
                                                                          "it's"])),
    "datetime": (nullable(DATETIMES), lambda v: _datetimes(v, None)),
    "datetime-tz": (nullable(DATETIMES), lambda v: _datetimes(v, "Asia/Kolkata")),
    "timedelta": (nullable(DURATIONS), lambda v: pd.Series(v, dtype="timedelta64[us]")),
    "decimal": (nullable(DECIMALS),
                lambda v: pd.Series(v, dtype=pd.ArrowDtype(pa.decimal128(12, 2)))),
    "list": (nullable(st.lists(nullable(INT64), max_size=3)),
             lambda v: pd.Series(v, dtype=pd.ArrowDtype(pa.list_(pa.int64())))),
    "struct": (nullable(st.fixed_dictionaries({"a": nullable(INT64), "b": nullable(TEXT)})),
               lambda v: pd.Series(v, dtype=pd.ArrowDtype(
                   pa.struct([("a", pa.int64()), ("b", pa.string())])))),
}

POLARS: dict[str, Column] = {
    "Int64": (nullable(INT64), lambda v: pl.Series(v, dtype=pl.Int64)),
    "Int8": (nullable(st.integers(-128, 127)), lambda v: pl.Series(v, dtype=pl.Int8)),
    "UInt32": (nullable(st.integers(0, 2**32 - 1)), lambda v: pl.Series(v, dtype=pl.UInt32)),
    "Float32": (nullable(st.floats(allow_nan=False, width=32)),
                lambda v: pl.Series(v, dtype=pl.Float32)),
    "Float64": (nullable(FLOATS), lambda v: pl.Series(v, dtype=pl.Float64)),
    "Boolean": (nullable(st.booleans()), lambda v: pl.Series(v, dtype=pl.Boolean)),
    "String": (nullable(TEXT), lambda v: pl.Series(v, dtype=pl.String)),
    "Binary": (nullable(st.binary(max_size=6)), lambda v: pl.Series(v, dtype=pl.Binary)),
    "Date": (nullable(st.dates()), lambda v: pl.Series(v, dtype=pl.Date)),
    "Datetime": (nullable(DATETIMES), lambda v: pl.Series(v, dtype=pl.Datetime("us"))),
    "Datetime-tz": (nullable(DATETIMES),
                    lambda v: pl.Series(v, dtype=pl.Datetime("us")).dt.replace_time_zone(
                        "UTC").dt.convert_time_zone("America/Sao_Paulo")),
    "Duration": (nullable(DURATIONS), lambda v: pl.Series(v, dtype=pl.Duration("us"))),
    "Decimal": (nullable(DECIMALS), lambda v: pl.Series(v, dtype=pl.Decimal(12, 2))),
    "List": (nullable(st.lists(nullable(INT64), max_size=3)),
             lambda v: pl.Series(v, dtype=pl.List(pl.Int64))),
    "Struct": (nullable(st.fixed_dictionaries({"a": nullable(INT64), "b": nullable(TEXT)})),
               lambda v: pl.Series(v, dtype=pl.Struct({"a": pl.Int64, "b": pl.String}))),
    "Categorical": (nullable(CATS), lambda v: pl.Series(v, dtype=pl.Categorical)),
    "Enum": (nullable(CATS), lambda v: pl.Series(v, dtype=pl.Enum(["red", "green", "it's"]))),
}


@st.composite
def frames(draw: st.DrawFn, kinds: dict[str, Column]) -> dict[str, Any]:
    """Column name -> column, for a random subset of ``kinds`` and 0-6 rows."""
    names = draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=6,
                          unique=True))
    rows = draw(st.integers(0, 6))
    data: dict[str, Any] = {"row": list(range(rows))}
    for name in names:
        values, build = kinds[name]
        data[name] = build(draw(st.lists(values, min_size=rows, max_size=rows)))
    return data


def fresh(conn: nsframe.Connection, ns: str) -> str:
    ident = f"{ns}$p{uuid.uuid4().hex[:10]}"
    conn.create_table(ident)  # declared only: the insert creates it
    return ident


@SETTINGS
@given(data=frames(PANDAS))
def test_pandas_frames_round_trip(conn: nsframe.Connection, ns: str,
                                  data: dict[str, Any]) -> None:
    frame = pd.DataFrame({k: (pd.Series(v, dtype="int64") if k == "row" else v)
                          for k, v in data.items()})
    ident = fresh(conn, ns)
    result = frame.ns.insert(ident, conn=conn)
    assert result.num_rows == len(frame)
    back = conn.table(ident).to_pandas().sort_values("row", ignore_index=True)
    pd.testing.assert_frame_equal(back, frame, check_exact=True)


@SETTINGS
@given(data=frames(POLARS), lazy=st.booleans())
def test_polars_frames_round_trip(conn: nsframe.Connection, ns: str,
                                  data: dict[str, Any], lazy: bool) -> None:
    frame = pl.DataFrame({k: (pl.Series(v, dtype=pl.Int64) if k == "row" else v)
                          for k, v in data.items()})
    ident = fresh(conn, ns)
    result = (frame.lazy() if lazy else frame).ns.insert(ident, conn=conn)
    assert result.num_rows == frame.height
    back = conn.table(ident).to_polars().sort("row")
    assert back.schema == frame.schema
    assert back.equals(frame), (back, frame)

