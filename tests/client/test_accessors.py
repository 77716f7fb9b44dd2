"""``df.ns`` / ``lf.ns`` against the real server, the same tests for pandas, polars and
polars LazyFrames."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.accessors._pandas import PandasNs
from nsframe.accessors._polars import PolarsLazyNs, PolarsNs
from nsframe.exceptions import TableAlreadyExistsError, TableNotFoundError

KINDS = ["pandas", "polars", "polars-lazy"]
DIM = 4


def make(kind: str, data: dict[str, Any]) -> Any:
    """The same columns as a pandas frame, a polars frame or a polars LazyFrame."""
    if kind == "pandas":
        return pd.DataFrame(data)
    frame = pl.DataFrame(data)
    return frame.lazy() if kind == "polars-lazy" else frame


def items(n: int, start: int = 0) -> dict[str, Any]:
    vectors = np.random.default_rng(start).random((n, DIM), dtype=np.float32)
    return {
        "id": np.arange(start, start + n, dtype=np.int64),
        "name": [f"item-{i}" for i in range(start, start + n)],
        "vector": [row.tolist() for row in vectors],
    }


def as_arrow(frame: Any) -> pa.Table:
    if isinstance(frame, pd.DataFrame):
        return pa.Table.from_pandas(frame, preserve_index=False)
    if isinstance(frame, pl.LazyFrame):
        return frame.collect().to_arrow()
    return frame.to_arrow()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def default_conn(conn: nsframe.Connection) -> Iterator[nsframe.Connection]:
    nsframe.set_default(conn)
    yield conn
    nsframe.set_default(None)


# ---------------------------------------------------------------------- the surface
ACCESSORS = [pytest.param(PandasNs, id="pandas"), pytest.param(PolarsNs, id="polars"),
             pytest.param(PolarsLazyNs, id="polars-lazy")]


@pytest.mark.parametrize("cls", ACCESSORS)
def test_accessors_have_the_same_methods_and_signatures(cls: type) -> None:
    def surface(c: type) -> dict[str, inspect.Signature]:
        return {name: inspect.signature(getattr(c, name)) for name in dir(c)
                if not name.startswith("_") and callable(getattr(c, name))}

    assert surface(cls) == surface(PandasNs)
    assert set(surface(cls)) == {"insert", "to_table", "search", "upsert", "delete_matching"}
    for name in surface(cls):
        assert getattr(cls, name).__doc__, name


def test_accessors_are_registered_on_each_frame_type() -> None:
    assert isinstance(pd.DataFrame().ns, PandasNs)
    assert isinstance(pl.DataFrame().ns, PolarsNs)
    assert isinstance(pl.LazyFrame().ns, PolarsLazyNs)


@pytest.mark.parametrize("order", ["nsframe-first", "library-first"])
@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_import_order_does_not_matter_and_nothing_is_imported_eagerly(
        order: str, library: str) -> None:
    imports = ["import nsframe", f"import {library}"]
    if order == "library-first":
        imports.reverse()
    script = "\n".join([
        "import sys, warnings", "warnings.simplefilter('error')", *imports,
        f"frame = {library}.DataFrame({{'a': [1]}})",
        "print(type(frame.ns).__name__)",
        "print('polars' in sys.modules, 'pandas' in sys.modules)",
    ])
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out[0] == ("PandasNs" if library == "pandas" else "PolarsNs")
    # The other library was not imported by nsframe.
    assert out[1:] == (["False", "True"] if library == "pandas" else ["True", "False"])


def test_accessor_holds_only_the_frame() -> None:
    frame = pd.DataFrame({"a": [1]})
    assert vars(frame.ns) == {"_frame": frame}
    assert frame.ns is not frame.ns  # pandas makes a fresh one on each access


# ---------------------------------------------------------------------- insert / to_table
def test_to_table_creates_then_fails_appends_or_replaces(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    ident = f"{ns}$items"
    tbl = make(kind, items(10)).ns.to_table(ident, conn=conn)
    assert isinstance(tbl, nsframe.Table)
    assert tbl.count_rows() == 10
    assert tbl.schema.field("vector").type == pa.list_(pa.float32(), DIM)
    with pytest.raises(TableAlreadyExistsError) as info:
        make(kind, items(3, 100)).ns.to_table(ident, conn=conn)
    # The message names this method's arguments, not the REST create modes.
    assert "mode='append'" in str(info.value) and "mode='overwrite'" in str(info.value)
    assert "exist_ok" not in str(info.value) and str(info.value).startswith("Table ")
    assert tbl.count_rows() == 10  # nothing written by the refused create
    make(kind, items(5, 10)).ns.to_table(ident, mode="append", conn=conn)
    assert sorted(tbl.to_arrow().column("id").to_pylist()) == list(range(15))
    make(kind, items(2, 50)).ns.to_table(ident, mode="overwrite", conn=conn)
    assert sorted(tbl.to_arrow().column("id").to_pylist()) == [50, 51]
    make(kind, items(2, 60)).ns.to_table(f"{ns}$fresh", mode="append", conn=conn)
    assert conn.table(f"{ns}$fresh").count_rows() == 2
    with pytest.raises(ValueError, match="mode must be one of"):
        make(kind, items(1)).ns.to_table(ident, mode="upsert", conn=conn)


def test_to_table_if_exists_is_a_deprecated_alias_of_mode(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    ident = f"{ns}$items"
    make(kind, items(2)).ns.to_table(ident, conn=conn)
    with pytest.warns(DeprecationWarning, match="mode='append'"):
        make(kind, items(1, 10)).ns.to_table(ident, if_exists="append", conn=conn)
    with pytest.warns(DeprecationWarning, match="mode='overwrite'"):
        make(kind, items(1, 20)).ns.to_table(ident, if_exists="replace", conn=conn)
    assert conn.table(ident).to_arrow().column("id").to_pylist() == [20]
    with pytest.warns(DeprecationWarning), pytest.raises(TableAlreadyExistsError):
        make(kind, items(1)).ns.to_table(ident, if_exists="fail", conn=conn)
    with pytest.raises(ValueError, match="if_exists must be one of"):
        make(kind, items(1)).ns.to_table(ident, if_exists="upsert", conn=conn)


def test_to_table_refuses_a_dotted_id_when_the_namespace_exists(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    # SQL's schema.table: "lab.items2" would make a root table although namespace lab exists.
    with pytest.raises(ValueError, match=rf"Did you mean '{ns}\$items2'\?"):
        make(kind, items(1)).ns.to_table(f"{ns}.items2", conn=conn)
    assert f"{ns}.items2" not in conn.table_names()


def test_insert_appends_overwrites_and_returns_the_version(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$items", pa.Table.from_pandas(pd.DataFrame(items(0))))
    tbl = pd.DataFrame(items(4)).ns.to_table(f"{ns}$items", mode="overwrite", conn=conn)
    result = make(kind, items(3, 4)).ns.insert(tbl)
    assert (result.num_rows, result.version) == (3, tbl.version)
    assert tbl.count_rows() == 7
    result = make(kind, items(2, 90)).ns.insert(tbl, mode="overwrite")
    assert sorted(tbl.to_arrow().column("id").to_pylist()) == [90, 91]
    got = tbl.to_arrow().sort_by("id")
    expected = as_arrow(make(kind, items(2, 90)))
    assert got.column("name").to_pylist() == expected.column("name").to_pylist()
    np.testing.assert_allclose(np.stack(got.column("vector").to_numpy(zero_copy_only=False)),
                               np.stack(expected.column("vector").to_numpy(
                                   zero_copy_only=False)), rtol=1e-6)


def test_insert_into_a_branch(kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = pd.DataFrame(items(3)).ns.to_table(f"{ns}$items", conn=conn)
    tbl.create_branch("exp")
    make(kind, items(2, 3)).ns.insert(tbl, branch="exp")
    assert tbl.count_rows() == 3
    assert tbl.branch("exp").count_rows() == 5


def test_to_table_on_a_branch(kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = pd.DataFrame(items(3)).ns.to_table(f"{ns}$items", conn=conn)
    tbl.create_branch("exp")
    with pytest.raises(ValueError, match="mode='append' or mode='overwrite'"):
        make(kind, items(1, 9)).ns.to_table(tbl, branch="exp")
    make(kind, items(2, 10)).ns.to_table(tbl, branch="exp", mode="overwrite")
    assert sorted(tbl.branch("exp").to_arrow().column("id").to_pylist()) == [10, 11]
    assert tbl.count_rows() == 3


def test_string_ids_use_the_default_connection(kind: str, default_conn: nsframe.Connection,
                                                ns: str) -> None:
    make(kind, items(3)).ns.to_table(f"{ns}$items")
    make(kind, items(2, 3)).ns.insert(f"{ns}$items")
    assert default_conn.table(f"{ns}$items").count_rows() == 5


def test_string_ids_without_any_connection_say_what_to_do(kind: str, ns: str) -> None:
    nsframe.set_default(None)
    with pytest.raises(RuntimeError, match="set_default"):
        make(kind, items(1)).ns.insert(f"{ns}$items")
    with pytest.raises(TypeError, match="table id string"):
        make(kind, items(1)).ns.insert(42)  # type: ignore[arg-type]


def test_insert_into_a_missing_table_is_not_found(kind: str, conn: nsframe.Connection,
                                                  ns: str) -> None:
    with pytest.raises(TableNotFoundError):
        make(kind, items(2)).ns.insert(f"{ns}$missing", conn=conn)
    assert not conn.client.table_exists(f"{ns}$missing")


def test_named_vector_columns_and_bad_vectors_fail_before_sending(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    ident = f"{ns}$items"
    ragged = {"id": [1, 2], "vector": [[1.0, 2.0], [1.0]]}
    with pytest.raises(ValueError, match="row 1 has 1 numbers, not 2"):
        make(kind, ragged).ns.to_table(ident, conn=conn, vector_columns={"vector": 2})
    with pytest.raises(ValueError, match="not lists of numbers"):
        make(kind, {"id": [1], "vector": ["a"]}).ns.to_table(
            ident, conn=conn, vector_columns={"vector": 2})
    with pytest.raises(ValueError, match="NaN"):
        make(kind, {"id": [1], "vector": [[1.0, float("nan")]]}).ns.to_table(ident, conn=conn)
    with pytest.raises(ValueError, match="not columns of the data"):
        make(kind, items(1)).ns.to_table(ident, conn=conn, vector_columns={"emb": 4})
    assert not conn.client.table_exists(ident)  # nothing was sent
    # Ragged float lists that nobody named stay lists.
    tbl = make(kind, ragged).ns.to_table(ident, conn=conn)
    assert pa.types.is_list(tbl.schema.field("vector").type) \
        or pa.types.is_large_list(tbl.schema.field("vector").type)
    # Integer lists become vectors only when named.
    tbl = make(kind, {"id": [1], "v": [[1, 2, 3]]}).ns.to_table(
        f"{ns}$ints", conn=conn, vector_columns={"v": 3})
    assert tbl.schema.field("v").type == pa.list_(pa.float32(), 3)
    assert tbl.to_arrow().column("v").to_pylist() == [[1.0, 2.0, 3.0]]


def test_vector_columns_can_be_switched_off(kind: str, conn: nsframe.Connection,
                                            ns: str) -> None:
    tbl = make(kind, items(2)).ns.to_table(f"{ns}$items", conn=conn, vector_columns={})
    assert not pa.types.is_fixed_size_list(tbl.schema.field("vector").type)


# ---------------------------------------------------------------------- search
def test_search_returns_the_nearest_rows_of_each_frame_row(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = pd.DataFrame(items(30)).ns.to_table(f"{ns}$items", conn=conn)
    queries = make(kind, items(30))  # the same vectors: each row's nearest is itself
    if kind == "pandas":
        queries = queries.iloc[[4, 9, 17]]
    else:
        queries = queries.filter(pl.col("id").is_in([4, 9, 17]))
    hits = queries.ns.search(tbl, k=2, batch_size=2)  # two requests
    assert type(hits) is type(queries)
    table = as_arrow(hits)
    assert table.column_names[0] == "query_index"
    rows = table.to_pylist()
    assert [r["query_index"] for r in rows] == [0, 0, 1, 1, 2, 2]
    assert [r["id"] for r in rows][::2] == [4, 9, 17]
    assert all(r["_distance"] == 0.0 for r in rows[::2])
    assert all(r["_distance"] > 0.0 for r in rows[1::2])


def test_search_with_filter_select_and_default_connection(
        kind: str, default_conn: nsframe.Connection, ns: str) -> None:
    pd.DataFrame(items(20)).ns.to_table(f"{ns}$items")
    hits = make(kind, items(2)).ns.search(f"{ns}$items", column="vector", k=3,
                                          where="id >= 10", select=["id"])
    table = as_arrow(hits)
    assert set(table.column_names) == {"query_index", "id", "_distance"}
    assert table.num_rows == 6
    assert min(table.column("id").to_pylist()) >= 10


def test_search_mistakes_are_clear(kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = pd.DataFrame(items(5)).ns.to_table(f"{ns}$items", conn=conn)
    with pytest.raises(ValueError, match="no column 'vector'"):
        make(kind, {"id": [1]}).ns.search(tbl)
    with pytest.raises(ValueError, match="not a vector column"):
        make(kind, items(1)).ns.search(tbl, column="name")
    with pytest.raises(ValueError, match="not 4"):
        make(kind, {"vector": [[1.0, 2.0]]}).ns.search(tbl)


# ---------------------------------------------------------------------- delete_matching
def test_delete_matching_deletes_exactly_the_frames_keys_in_batches(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    names = ["plain", "it's", "quote ' and \\ backslash", "-- comment", "x') OR (1=1"]
    data = {"id": list(range(len(names))), "name": names}
    tbl = pd.DataFrame(data).ns.to_table(f"{ns}$items", conn=conn)
    doomed = make(kind, {"name": [*names[1:], None]})
    result = doomed.ns.delete_matching(tbl, on="name", batch_size=2)
    assert result.num_rows == 4
    assert result.raw["batches"] == 2
    assert result.version == tbl.version
    assert tbl.to_arrow().column("name").to_pylist() == ["plain"]


def test_delete_matching_on_several_columns(kind: str, conn: nsframe.Connection,
                                            ns: str) -> None:
    tbl = pd.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "y"]}).ns.to_table(
        f"{ns}$items", conn=conn)
    result = make(kind, {"a": [1, 2], "b": ["y", "x"]}).ns.delete_matching(tbl, on=["a", "b"])
    assert result.num_rows == 2
    assert sorted(map(tuple, tbl.to_arrow().to_pandas().values.tolist())) == \
        [(1, "x"), (2, "y")]


def test_delete_matching_mistakes(kind: str, conn: nsframe.Connection, ns: str) -> None:
    tbl = pd.DataFrame({"id": [1, 2]}).ns.to_table(f"{ns}$items", conn=conn)
    with pytest.raises(ValueError, match="no column 'key'"):
        make(kind, {"id": [1]}).ns.delete_matching(tbl, on="key")
    with pytest.raises(ValueError, match="at least one key column"):
        make(kind, {"id": [1]}).ns.delete_matching(tbl, on=[])
    empty = make(kind, {"id": pl.Series([], dtype=pl.Int64).to_list()})
    assert empty.ns.delete_matching(tbl).num_rows == 0
    assert tbl.count_rows() == 2
