"""The frame boundary: any input to Arrow batches, Arrow back to pandas or polars, and
exact round trips through the real server."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe import _frames

# ---------------------------------------------------------------------- inputs
ROWS = [{"id": 1, "name": "a"}, {"id": 2, "name": None}]


class StreamOnly:
    """Exports only the Arrow C stream interface, as DuckDB relations do."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._table.__arrow_c_stream__(requested_schema)


def inputs() -> list[Any]:
    table = pa.Table.from_pylist(ROWS)
    return [
        pytest.param(table, id="pyarrow-table"),
        pytest.param(table.to_batches()[0], id="record-batch"),
        pytest.param(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
                     id="reader"),
        pytest.param(StreamOnly(table), id="arrow-c-stream"),
        pytest.param(pd.DataFrame(ROWS), id="pandas"),
        pytest.param(pl.DataFrame(ROWS), id="polars"),
        pytest.param(pl.DataFrame(ROWS).lazy(), id="polars-lazy"),
        pytest.param(ROWS, id="list-of-dicts"),
        pytest.param({"id": [1, 2], "name": ["a", None]}, id="dict-of-columns"),
        pytest.param(iter(table.slice(i, 1).to_batches()[0] for i in range(2)),
                     id="generator-of-batches"),
        pytest.param(iter([pd.DataFrame(ROWS[:1]), pd.DataFrame(ROWS[1:])]),
                     id="generator-of-pandas"),
        pytest.param(iter([pl.DataFrame(ROWS[:1]), pl.DataFrame(ROWS[1:])]),
                     id="generator-of-polars"),
    ]


@pytest.mark.parametrize("data", inputs())
def test_every_input_becomes_the_same_batches(data: Any) -> None:
    source = _frames.to_source(data)
    table = pa.Table.from_batches(list(source.batches), schema=source.schema)
    assert table.to_pylist() == ROWS
    assert table.schema.field("id").type == pa.int64()


@pytest.mark.parametrize("data", [pytest.param("text", id="str"), pytest.param(3, id="int"),
                                  pytest.param([1, 2], id="list-of-ints")])
def test_non_tabular_input_is_a_type_error(data: Any) -> None:
    with pytest.raises(TypeError, match="Cannot turn a"):
        _frames.to_source(data)


def test_a_later_batch_with_other_columns_is_a_clear_error() -> None:
    source = _frames.to_source(iter([{"a": [1]}, {"b": [2]}]))
    with pytest.raises(ValueError, match="does not match the first one's schema"):
        list(source.batches)


def test_a_2d_numpy_column_and_object_arrays_become_vectors() -> None:
    matrix = np.arange(6, dtype=np.float64).reshape(3, 2)
    for data in ({"v": matrix}, pd.DataFrame({"v": list(matrix)})):
        table = _frames.to_table(data)
        assert table.schema.field("v").type == pa.list_(pa.float32(), 2)
        assert table.column("v").to_pylist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_null_vectors_stay_null_in_an_object_column() -> None:
    frame = pd.DataFrame({"v": [np.array([1.0, 2.0]), None, np.array([3.0, 4.0])]})
    table = _frames.to_table(frame)
    assert table.schema.field("v").type == pa.list_(pa.float32(), 2)
    assert table.column("v").to_pylist() == [[1.0, 2.0], None, [3.0, 4.0]]


def test_nan_inside_a_numpy_vector_is_refused() -> None:
    frame = pd.DataFrame({"v": [np.array([1.0, 2.0]), np.array([np.nan, 1.0]), np.nan]})
    with pytest.raises(ValueError, match="NaN inside a vector"):
        list(_frames.to_source(frame).batches)
    # A NaN for the whole row is a missing vector.
    assert _frames.to_table(frame.iloc[[0, 2]]).column("v").to_pylist() == [[1.0, 2.0], None]


def test_infinities_are_not_taken_for_nan() -> None:
    # +inf and -inf together sum to NaN: the quick NaN check must not refuse them.
    inf = float("inf")
    for data in ({"v": [[inf, 1.0], [-inf, 2.0]]},
                 pl.DataFrame({"v": [[inf, -inf], [0.0, 1.0]]},
                              schema={"v": pl.Array(pl.Float32, 2)})):
        table = _frames.to_table(data)
        assert table.schema.field("v").type == pa.list_(pa.float32(), 2)
        assert table.column("v").to_pylist() in ([[inf, 1.0], [-inf, 2.0]],
                                                 [[inf, -inf], [0.0, 1.0]])
    with pytest.raises(ValueError, match="NaN inside a vector"):
        _frames.to_table({"v": [[inf, -inf], [float("nan"), 1.0]]})


def test_float16_vectors_are_checked_and_widened() -> None:
    half = pa.list_(pa.float16(), 2)
    good = pa.table({"v": pa.array([[np.float16(1), np.float16(-2)], None], half)})
    table = _frames.to_source(good, vector_columns={"v": 2}).reader().read_all()
    assert table.schema.field("v").type == pa.list_(pa.float32(), 2)
    assert table.column("v").to_pylist() == [[1.0, -2.0], None]
    bad = pa.table({"v": pa.array([[np.float16("nan"), np.float16(0)]], half)})
    with pytest.raises(ValueError, match="NaN inside a vector"):
        _frames.to_source(bad, vector_columns={"v": 2})


def test_ragged_object_arrays_stay_lists_unless_named() -> None:
    frame = pd.DataFrame({"v": [np.array([1.0, 2.0]), np.array([3.0])]})
    assert pa.types.is_list(_frames.to_table(frame).schema.field("v").type)
    with pytest.raises(ValueError, match="row 1 is not 2 numbers"):
        _frames.to_source(frame, vector_columns={"v": 2})
    with pytest.raises(ValueError, match="dimension > 0"):
        _frames.to_source(frame, vector_columns={"v": 0})


def test_arrow_input_keeps_its_list_types_unless_named() -> None:
    table = pa.table({"v": pa.array([[1.0, 2.0]], pa.list_(pa.float64()))})
    assert _frames.to_source(table).schema == table.schema
    named = _frames.to_source(table, vector_columns={"v": 2})
    assert named.schema.field("v").type == pa.list_(pa.float32(), 2)


# ---------------------------------------------------------------------- outputs
def test_pandas_backends() -> None:
    table = pa.table({"i": pa.array([1, None], pa.int64()), "s": ["a", None]})
    nullable = _frames.to_pandas(table)
    assert str(nullable["i"].dtype) == "Int64"
    arrow = _frames.to_pandas(table, dtype_backend="pyarrow")
    assert isinstance(arrow["i"].dtype, pd.ArrowDtype)
    numpy = _frames.to_pandas(table, dtype_backend="numpy")
    assert numpy["i"].dtype == np.float64
    assert _frames.to_pandas(table, dtype_backend=None)["i"].dtype == np.float64
    with pytest.raises(ValueError, match="dtype_backend must be one of"):
        _frames.to_pandas(table, dtype_backend="numpy-nullable")


def test_polars_output_is_zero_copy_for_numbers() -> None:
    values = pa.array(np.arange(1000, dtype=np.int64))
    frame = _frames.to_polars(pa.table({"x": values}))
    assert frame["x"].to_arrow().buffers()[1].address == values.buffers()[1].address


# ---------------------------------------------------------------------- round trips
PANDAS_COLUMNS = {
    "Int64": pd.array([1, None, 3], dtype="Int64"),
    "Int8": pd.array([1, None, -3], dtype="Int8"),
    "UInt32": pd.array([1, None, 3], dtype="UInt32"),
    "Float32": pd.array([1.5, None, 3.0], dtype="Float32"),
    "Float64": pd.array([1.5, None, 3.0], dtype="Float64"),
    "boolean": pd.array([True, None, False], dtype="boolean"),
    "string": pd.array(["a", None, "it's"], dtype="string"),
    "str": pd.Series(["a", None, "c"], dtype="str"),
    "int64": np.array([1, 2, 3], dtype=np.int64),
    "float64": np.array([1.5, np.nan, 3.0]),
    "bool": np.array([True, False, True]),
    "category": pd.Categorical(["x", None, "y"], categories=["y", "x", "z"]),
    "ordered-category": pd.Categorical(["x", "y", "x"], ordered=True),
    "datetime-naive": pd.to_datetime(["2020-01-01 00:00:00", None, "2021-06-30 12:00:01.123456"],
                                     format="ISO8601"),
    "datetime-tz": pd.to_datetime(["2020-01-01", None, "2021-06-30"]).tz_localize(
        "America/New_York"),
    "datetime-ns": pd.to_datetime(["2020-01-01", None, "2021-06-30"]).as_unit("ns"),
    "timedelta": pd.to_timedelta(["1 day", None, "3 seconds"]),
    "decimal": pd.Series([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
                         dtype=pd.ArrowDtype(pa.decimal128(10, 2))),
    "list": pd.Series([[1, 2], None, []], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
    "struct": pd.Series([{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}],
                        dtype=pd.ArrowDtype(pa.struct([("a", pa.int64()), ("b", pa.string())]))),
}


@pytest.mark.parametrize("name", list(PANDAS_COLUMNS))
def test_pandas_dtypes_round_trip_exactly(name: str, conn: nsframe.Connection,
                                          ns: str) -> None:
    frame = pd.DataFrame({"id": [0, 1, 2], "value": PANDAS_COLUMNS[name]})
    tbl = frame.ns.to_table(f"{ns}$t", conn=conn)
    back = tbl.to_pandas().sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(back, frame, check_exact=True)


def test_pandas_object_decimals_round_trip(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"d": [decimal.Decimal("1.25"), None, decimal.Decimal("10.5")]})
    back = frame.ns.to_table(f"{ns}$t", conn=conn).to_pandas()
    assert back["d"].dtype == object
    assert back["d"].tolist() == [decimal.Decimal("1.25"), None, decimal.Decimal("10.50")]


@pytest.mark.parametrize("index", [
    pytest.param(pd.RangeIndex(3), id="default-range"),
    pytest.param(pd.RangeIndex(10, 13), id="unnamed-range"),
    pytest.param(pd.Index([7, 3, 5]), id="unnamed-int"),
])
def test_row_number_indexes_are_dropped(index: pd.Index, conn: nsframe.Connection,
                                        ns: str) -> None:
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=index)
    tbl = frame.ns.to_table(f"{ns}$t", conn=conn)
    assert tbl.schema.names == ["x"]
    back = tbl.to_pandas()
    pd.testing.assert_index_equal(back.index, pd.RangeIndex(3))
    assert back["x"].tolist() == [1, 2, 3]


@pytest.mark.parametrize("index", [
    pytest.param(pd.Index(["a", "b", "c"], name="key"), id="named"),
    pytest.param(pd.RangeIndex(3, name="row"), id="named-range"),
    pytest.param(pd.DatetimeIndex(["2020-01-01", "2020-01-02", "2020-01-03"]), id="dates"),
    pytest.param(pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1)],
                                           names=["k", "n"]), id="multi"),
])
def test_data_indexes_are_stored_and_restored(index: pd.Index, conn: nsframe.Connection,
                                              ns: str) -> None:
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=index)
    tbl = frame.ns.to_table(f"{ns}$t", conn=conn)
    assert len(tbl.schema.names) == 1 + index.nlevels
    pd.testing.assert_frame_equal(tbl.to_pandas(), frame)


def test_appending_a_filtered_frame_drops_its_index(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"x": [1, 2, 3, 4]}, index=pd.Index(["a", "b", "c", "d"]))
    tbl = pd.DataFrame({"x": [0]}).ns.to_table(f"{ns}$t", conn=conn)
    frame.ns.insert(tbl)  # the table has no index column: the index is not stored
    assert sorted(tbl.to_pandas()["x"]) == [0, 1, 2, 3, 4]


def test_query_results_carry_the_pandas_metadata(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"id": [1, 2], "n": pd.array([1, None], dtype="Int16"),
                          "c": pd.Categorical(["a", "b"])})
    tbl = frame.ns.to_table(f"{ns}$t", conn=conn)
    result = tbl.search().where("id >= ?", [1]).to_arrow()
    assert result.schema.pandas_metadata is not None
    subset = tbl.search().select(["n"]).to_pandas()
    assert str(subset["n"].dtype) == "Int16"
    assert subset.columns.tolist() == ["n"]


def polars_frame() -> pl.DataFrame:
    return pl.DataFrame({
        "i8": pl.Series([1, None], dtype=pl.Int8),
        "u64": pl.Series([2**63 + 1, None], dtype=pl.UInt64),
        "f32": pl.Series([1.5, None], dtype=pl.Float32),
        "s": ["a", None],
        "b": [True, None],
        "d": [dt.date(2020, 1, 1), None],
        "ts": pl.Series([dt.datetime(2020, 1, 1, 1), None]).dt.replace_time_zone(
            "Europe/Paris"),
        "ns": pl.Series([dt.datetime(2020, 1, 1), None]).cast(pl.Datetime("ns")),
        "ms": pl.Series([dt.datetime(2020, 1, 1), None]).cast(pl.Datetime("ms")),
        "dur": pl.Series([dt.timedelta(days=1, microseconds=3), None]),
        "tm": pl.Series([dt.time(1, 2, 3), None]),
        "dec": pl.Series([decimal.Decimal("1.23"), None], dtype=pl.Decimal(10, 2)),
        # Decimals nested in structs and lists need 16-byte aligned buffers in Lance too.
        "dec_struct": pl.Series([{"d": decimal.Decimal("1.5")}, None],
                                dtype=pl.Struct({"d": pl.Decimal(10, 2)})),
        "dec_list": pl.Series([[decimal.Decimal("2.25")], None], dtype=pl.List(pl.Decimal(10, 2))),
        "ints": pl.Series([[1, 2], None]),
        "strs": pl.Series([["x"], []], dtype=pl.List(pl.String)),
        "arr": pl.Series([[1.0, 2.0], None], dtype=pl.Array(pl.Float32, 2)),
        "st": pl.Series([{"x": 1, "y": "a"}, None]),
        "cat": pl.Series(["a", None], dtype=pl.Categorical),
        "enum": pl.Series(["b", None], dtype=pl.Enum(["a", "b"])),
        "bin": [b"x\x00", None],
        "null": pl.Series([None, None], dtype=pl.Null),
    })


@pytest.mark.parametrize("lazy", [False, True], ids=["frame", "lazy"])
def test_polars_types_round_trip_exactly(lazy: bool, conn: nsframe.Connection,
                                         ns: str) -> None:
    frame = polars_frame().with_row_index("id")
    (frame.lazy() if lazy else frame).ns.to_table(f"{ns}$t", conn=conn)
    back = conn.table(f"{ns}$t").to_polars().sort("id")
    assert back.schema == frame.schema
    assert back.equals(frame)


def test_a_polars_table_read_into_pandas_and_back(conn: nsframe.Connection, ns: str) -> None:
    tbl = pl.DataFrame({"i": pl.Series([1, None], dtype=pl.Int32), "s": ["a", None]}).ns \
        .to_table(f"{ns}$t", conn=conn)
    frame = tbl.to_pandas()
    assert [str(t) for t in frame.dtypes] == ["Int32", "str"]
    frame.ns.insert(tbl)  # pandas types are cast to the table's (string, int32)
    assert tbl.to_polars().sort("i", nulls_last=True)["i"].to_list() == [1, 1, None, None]


def generated(n: int) -> Iterator[pa.RecordBatch]:
    for start in range(0, n, 10):
        yield pa.record_batch({"x": pa.array(range(start, min(n, start + 10)), pa.int64())})


def test_a_generator_of_batches_is_inserted_whole(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$t", schema=pa.schema([("x", pa.int64())]))
    result = tbl.insert(generated(35))
    assert result.num_rows == 35
    assert sorted(tbl.to_arrow().column("x").to_pylist()) == list(range(35))


# ------------------------------------------------- dictionaries from several writers
def test_a_polars_append_to_a_pandas_categorical_reads_back_filtered(conn: Any, ns: str) -> None:
    """Lance answers a filtered scan over both writers' fragments as one chunk whose
    dictionary repeats values (['a', 'b', 'c', 'c', 'a']); pandas refused it."""
    frame = pd.DataFrame({"id": range(6), "category": pd.Categorical(list("abcabc"))})
    table = frame.ns.to_table(f"{ns}$t", conn=conn)
    pl.DataFrame({"id": [6, 7], "category": pl.Series(["c", "a"], dtype=pl.Categorical)}
                 ).ns.insert(table)

    got = table.search().where("id >= 0").to_pandas().sort_values("id")
    assert list(got["category"]) == list("abcabcca")
    assert list(got["category"].cat.categories) == ["a", "b", "c"]
    polars = table.search().where("id >= 0").to_polars().sort("id")
    assert polars["category"].to_list() == list("abcabcca")


def test_duplicate_dictionary_values_become_one_category_each() -> None:
    chunk = pa.DictionaryArray.from_arrays(pa.array([0, 1, 3, 4, 2], pa.int8()),
                                           pa.array(["a", "b", "c", "c", "a"]))
    table = _frames.unique_dictionaries(pa.table({"c": chunk}))
    column = table.column("c").chunk(0)
    assert column.dictionary.to_pylist() == ["a", "b", "c"]
    assert column.to_pylist() == ["a", "b", "c", "a", "c"]


# ------------------------------------------------- the conversion plan, cached per schema
def stored(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as nsframe stores it: Arrow with pyarrow's pandas metadata (and ours)."""
    source = _frames.to_source(frame)
    return pa.Table.from_batches(list(source.batches), schema=source.schema)


def test_undescribed_columns_get_nullable_dtypes_beside_described_ones() -> None:
    """A query adds columns the metadata does not know (``_distance``); they are nullable
    even when a described column of the same Arrow type stays numpy."""
    table = stored(pd.DataFrame({"n": np.array([1, 2], dtype=np.int64),
                                 "f": np.array([0.5, 1.5], dtype=np.float32)}))
    table = table.append_column("extra", pa.array([7, None], pa.int64())) \
        .append_column("_distance", pa.array([0.25, None], pa.float32())) \
        .append_column("flag", pa.array([True, None]))
    frame = _frames.to_pandas(table)
    assert [str(t) for t in frame.dtypes] == ["int64", "float32", "Int64", "Float32", "boolean"]
    assert frame["extra"].tolist() == [7, pd.NA]
    assert frame["flag"].tolist() == [True, pd.NA]
    numpy = _frames.to_pandas(table, dtype_backend="numpy")
    assert [str(t) for t in numpy.dtypes] == ["int64", "float32", "float64", "float32", "object"]


def test_same_columns_with_other_metadata_are_planned_apart() -> None:
    described = stored(pd.DataFrame({"x": np.array([1, 2], dtype=np.int64)}))
    bare = described.replace_schema_metadata(None)
    assert described.schema == bare.schema  # equal without metadata: no shared plan
    assert str(_frames.to_pandas(described)["x"].dtype) == "int64"
    assert str(_frames.to_pandas(bare)["x"].dtype) == "Int64"
    assert str(_frames.to_pandas(described)["x"].dtype) == "int64"


def test_an_index_and_a_query_column_come_back_together() -> None:
    frame = pd.DataFrame({"x": pd.array([1, None], dtype="Int16")},
                         index=pd.Index(["a", "b"], name="key"))
    table = stored(frame).append_column("_distance", pa.array([0.5, 0.25], pa.float32()))
    back = _frames.to_pandas(table)
    expected = frame.assign(_distance=pd.array([0.5, 0.25], dtype="Float32"))
    pd.testing.assert_frame_equal(back, expected, check_exact=True)


def test_stored_categories_are_restored_only_where_they_differ() -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["b", "a"], categories=["b", "a", "z"]),
                          "o": pd.Categorical(["x", "y"], ordered=True)})
    table = stored(frame)
    # Lance answers with only the categories in use, and without the "ordered" flag.
    narrowed = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["b", "a"]))
    unordered = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["x", "y"]))
    answer = pa.Table.from_arrays([narrowed, unordered], schema=pa.schema(
        [("c", narrowed.type), ("o", unordered.type)], metadata=table.schema.metadata))
    for each in (table, answer):
        pd.testing.assert_frame_equal(_frames.to_pandas(each), frame, check_exact=True)


def test_integer_categories_take_the_stored_dtype() -> None:
    frame = pd.DataFrame({"c": pd.Categorical([3, 1], categories=[3, 1])})
    table = stored(frame)
    codes = pa.array([0, 1], pa.int8())
    narrow = pa.DictionaryArray.from_arrays(codes, pa.array([3, 1], pa.int32()))
    answer = pa.Table.from_arrays([narrow], schema=pa.schema(
        [("c", narrow.type)], metadata=table.schema.metadata))
    for each in (table, answer):
        back = _frames.to_pandas(each)
        assert back["c"].cat.categories.dtype == np.int64
        pd.testing.assert_frame_equal(back, frame, check_exact=True)


def test_a_dictionary_with_repeated_values_beside_stored_categories() -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["a", "b"], categories=["a", "b"])})
    table = stored(frame)
    repeated = pa.DictionaryArray.from_arrays(pa.array([0, 2], pa.int8()),
                                              pa.array(["a", "a", "b"]))
    answer = pa.Table.from_arrays([repeated], schema=pa.schema(
        [("c", repeated.type)], metadata=table.schema.metadata))
    pd.testing.assert_frame_equal(_frames.to_pandas(answer), frame, check_exact=True)


def test_categoricals_beside_an_index_and_under_tuple_labels() -> None:
    frame = pd.DataFrame({"x": [1, 2], "c": pd.Categorical(["b", "b"], categories=["a", "b"])},
                         index=pd.Index(["k1", "k2"], name="key"))
    table = stored(frame)
    narrowed = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int8()), pa.array(["b"]))
    answer = table.set_column(table.schema.get_field_index("c"), "c", narrowed)
    pd.testing.assert_frame_equal(_frames.to_pandas(answer), frame, check_exact=True)
    multi = frame.copy()
    multi.columns = pd.MultiIndex.from_tuples([("x", "1"), ("c", "2")])
    back = _frames.to_pandas(pa.Table.from_pandas(multi))
    pd.testing.assert_frame_equal(back, multi, check_exact=True)


@pytest.mark.parametrize("rows", [100, 5000], ids=["small-chunks", "large-chunks"])
def test_chunked_results_convert_as_one_chunk_would(rows: int) -> None:
    """Only some columns are combined before conversion (vectors, small pieces)."""
    n = 3 * rows
    whole = pa.table({
        "i": pa.array(range(n), pa.int64(), mask=np.arange(n) % 7 == 0),
        "s": pa.array([f"s{i}" for i in range(n)], mask=np.arange(n) % 5 == 0),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2 * n, dtype=np.float32)), 2),
        "c": pa.array(["a", "b", "c"] * rows).dictionary_encode(),
    })
    pieces = pa.Table.from_batches(whole.to_batches(max_chunksize=rows))
    assert pieces.column("i").num_chunks == 3
    for backend in _frames.PANDAS_BACKENDS:
        pd.testing.assert_frame_equal(_frames.to_pandas(pieces, dtype_backend=backend),
                                      _frames.to_pandas(whole, dtype_backend=backend),
                                      check_exact=True)
