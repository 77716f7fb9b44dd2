"""`Table` against the real server: metadata, reads, writes, versions, tags, branches, indexes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import (
    BranchNotFoundError,
    SchemaMismatchError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    TransactionNotFoundError,
    VersionNotFoundError,
)

DIM = 4


def items(n: int, start: int = 0, dim: int = DIM) -> pa.Table:
    rng = np.random.default_rng(start)
    vectors = rng.random((n, dim), dtype=np.float32)
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "name": [f"item-{i}" for i in range(start, start + n)],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
    })


@pytest.fixture
def tbl(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    return conn.create_table(f"{ns}$items", items(20))


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_schema_version_and_count(tbl: nsframe.Table) -> None:
    assert tbl.schema.field("vector").type == pa.list_(pa.float32(), DIM)
    assert tbl.schema.names == ["id", "name", "vector"]
    assert tbl.version == 1
    assert tbl.count_rows() == 20
    assert tbl.count_rows("id < 5") == 5
    assert len(tbl) == 20
    info = tbl.describe()
    assert (info.name, info.num_rows, info.is_only_declared) == ("items", 20, False)


def test_head_returns_first_rows(tbl: nsframe.Table) -> None:
    head = tbl.head(3)
    assert isinstance(head, pa.Table)
    assert head.num_rows == 3
    assert set(head.column("id").to_pylist()) <= set(range(20))


@pytest.mark.parametrize("kind", ["arrow", "reader", "pandas", "polars", "rows", "columns"])
def test_insert_accepts_every_input(tbl: nsframe.Table, kind: str) -> None:
    new = items(3, start=100)
    data: object = {
        "arrow": new,
        "reader": pa.RecordBatchReader.from_batches(new.schema, new.to_batches()),
        "pandas": new.to_pandas(),
        "polars": pl.from_arrow(new),
        "rows": new.to_pylist(),
        "columns": new.to_pydict(),
    }[kind]
    result = tbl.insert(data)
    assert result.version == 2
    assert result.num_rows == 3
    assert tbl.count_rows() == 23
    got = tbl.search().where("id >= 100").to_arrow()
    assert ids(got) == [100, 101, 102]
    assert got.column("name").to_pylist() == [f"item-{i}" for i in ids(got)]


def test_insert_overwrite_replaces_rows(tbl: nsframe.Table) -> None:
    result = tbl.insert(items(2, start=50), mode="overwrite")
    assert ids(tbl.to_arrow()) == [50, 51]
    assert result.version == 2


def test_insert_with_wrong_schema_is_refused_and_writes_nothing(tbl: nsframe.Table) -> None:
    with pytest.raises(SchemaMismatchError) as info:
        tbl.insert({"id": ["not", "ints"]})
    assert "id" in info.value.detail
    assert tbl.count_rows() == 20 and tbl.version == 1


def test_insert_bad_mode_is_a_value_error(tbl: nsframe.Table) -> None:
    with pytest.raises(ValueError, match="append"):
        tbl.insert(items(1), mode="upsert")


def test_delete_and_restore(tbl: nsframe.Table) -> None:
    result = tbl.delete("id >= 10")
    assert result.version == 2
    assert tbl.count_rows() == 10
    tbl.restore(1)
    assert tbl.count_rows() == 20
    assert tbl.version == 3
    with pytest.raises(ValueError, match="SQL"):
        tbl.delete("  ")


def test_restore_reports_a_transaction(conn: nsframe.Connection, tbl: nsframe.Table) -> None:
    tbl.delete("id > 0")
    result = tbl.restore(1)
    assert result.transaction_id and result.version == 3
    txn = conn.transaction(result.transaction_id)
    assert txn.status == "Succeeded" and txn.id == result.transaction_id
    with pytest.raises(TransactionNotFoundError):
        conn.transaction("no-such-transaction")


def test_restore_to_missing_version(tbl: nsframe.Table) -> None:
    with pytest.raises(VersionNotFoundError):
        tbl.restore(99)
    assert tbl.count_rows() == 20


def test_versions_lists_every_commit(tbl: nsframe.Table) -> None:
    tbl.insert(items(1, start=30))
    tbl.delete("id = 0")
    versions = tbl.versions()
    assert [v.version for v in versions] == [1, 2, 3]
    assert all(v.timestamp is not None for v in versions)
    assert versions[0].raw["version"] == 1
    assert tbl.list_versions() == versions


def test_tags_lifecycle(tbl: nsframe.Table) -> None:
    tbl.insert(items(5, start=40))
    first = tbl.create_tag("first", 1)
    assert (first.version, first.branch) == (1, "main")
    tbl.create_tag("now")
    assert tbl.tag_version("now") == 2
    tags = tbl.tags()
    assert sorted(tags) == ["first", "now"]
    assert tags["first"].version == 1
    with pytest.raises(TagAlreadyExistsError):
        tbl.create_tag("first", 2)
    tbl.update_tag("first", 2)
    assert tbl.tag_version("first") == 2
    tbl.delete_tag("first")
    assert sorted(tbl.tags()) == ["now"]
    with pytest.raises(TagNotFoundError):
        tbl.tag_version("first")


def test_restore_to_a_tag(tbl: nsframe.Table) -> None:
    tbl.create_tag("before")
    tbl.delete("true")
    assert tbl.count_rows() == 0
    tbl.restore("before")
    assert tbl.count_rows() == 20


def test_version_view_reads_old_data_and_refuses_writes(tbl: nsframe.Table) -> None:
    tbl.delete("id >= 5")
    old = tbl.at(version=1)
    assert old.count_rows() == 20
    assert ids(old.to_arrow()) == list(range(20))
    assert tbl.count_rows() == 5  # the handle it came from is unchanged
    assert tbl.ref == nsframe.Ref()
    with pytest.raises(nsframe.ReadOnlyTableError, match="read-only"):
        old.insert(items(1))
    with pytest.raises(ValueError, match="read-only"):
        old.delete("true")
    assert old.latest().count_rows() == 5


def test_tag_view(tbl: nsframe.Table) -> None:
    tbl.create_tag("full")
    tbl.delete("id > 2")
    view = tbl.at(tag="full")
    assert view.ref.version == 1 and view.ref.tag == "full"
    assert view.count_rows() == 20
    assert view.head(50).num_rows == 20
    with pytest.raises(TagNotFoundError):
        tbl.at(tag="nope")
    with pytest.raises(TypeError):
        tbl.at()


def test_branches_write_apart_from_main(tbl: nsframe.Table) -> None:
    exp = tbl.create_branch("exp")
    assert exp.ref.branch == "exp"
    exp.insert(items(4, start=200))
    exp.delete("id < 5")
    assert exp.count_rows() == 19
    assert tbl.count_rows() == 20
    assert ids(tbl.branch("exp").search().where("id >= 200").to_arrow()) == [200, 201, 202, 203]
    branches = tbl.branches()
    assert list(branches) == ["exp"]
    assert branches["exp"].parent_version == 1
    assert tbl.branch("main") == tbl
    tbl.delete_branch("exp")
    assert tbl.branches() == {}
    with pytest.raises(BranchNotFoundError):
        tbl.branch("exp").count_rows()


def test_to_frames_page_by_page(tbl: nsframe.Table) -> None:
    tbl.insert(items(30, start=20))
    whole = tbl.to_arrow(page_rows=7)
    assert ids(whole) == list(range(50))
    df = tbl.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert str(df["id"].dtype) == "Int64"
    assert sorted(df["id"].tolist()) == list(range(50))
    pl_df = tbl.to_polars(columns=["id"], filter="id < 10")
    assert isinstance(pl_df, pl.DataFrame)
    assert pl_df.columns == ["id"] and sorted(pl_df["id"].to_list()) == list(range(10))
    arrow_backed = tbl.to_pandas(columns=["name"], dtype_backend="pyarrow")
    assert str(arrow_backed["name"].dtype) == "string[pyarrow]"
    with pytest.raises(ValueError, match="dtype_backend"):
        tbl.to_pandas(dtype_backend="cudf")


def test_to_arrow_max_rows_guard(tbl: nsframe.Table) -> None:
    with pytest.raises(ValueError, match="max_rows=10"):
        tbl.to_arrow(max_rows=10)
    assert tbl.to_arrow(max_rows=None).num_rows == 20
    assert tbl.to_arrow(max_rows=10, filter="id < 10").num_rows == 10


def test_empty_table_reads_as_empty_frame(conn: nsframe.Connection, ns: str) -> None:
    schema = items(1).schema
    empty = conn.create_table(f"{ns}$empty", schema=schema)
    got = empty.to_arrow()
    assert got.num_rows == 0 and got.schema.names == schema.names
    assert empty.to_pandas().empty


def test_missing_table(conn: nsframe.Connection, ns: str) -> None:
    ghost = conn.table(f"{ns}$ghost")  # lazy: nothing sent yet
    with pytest.raises(TableNotFoundError) as info:
        ghost.count_rows()
    assert "ghost" in str(info.value)
    assert "count_rows" in str(info.value)


def test_indexes(conn: nsframe.Connection, ns: str) -> None:
    big = conn.create_table(f"{ns}$big", items(600, dim=8))
    big.create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=2,
                     distance_type="l2", name="vec_idx")
    big.create_scalar_index("id", name="id_idx")
    indices = {i.name: i for i in big.list_indices()}
    assert sorted(indices) == ["id_idx", "vec_idx"]
    assert indices["vec_idx"].columns == ("vector",)
    assert indices["id_idx"].columns == ("id",)
    assert big.index_stats("vec_idx")
    hits = big.search(np.zeros(8, np.float32)).nprobes(2).refine_factor(2).limit(5).to_arrow()
    assert hits.num_rows == 5
    big.drop_index("id_idx")
    assert [i.name for i in big.list_indices()] == ["vec_idx"]
    big.create_fts_index("name", name="name_fts")
    assert "name_fts" in [i.name for i in big.list_indices()]
    found = big.search("item-42", fts_columns=["name"]).select(["id"]).limit(3).to_list()
    assert 42 in [r["id"] for r in found]


def test_repr_shows_name_version_branch_rows_and_vectors(tbl: nsframe.Table) -> None:
    text = repr(tbl)
    assert text.splitlines()[0].endswith("(main): version 1, 20 rows")
    assert "vector: fixed_size_list<item: float>[4]  (vector, dim 4)" in text
    assert repr(tbl) == text  # deterministic
    assert "version 1" in repr(tbl.at(version=1))
    page = tbl._repr_html_()
    assert "<table>" in page and "dim 4" in page and "20 rows" in page
    assert tbl._repr_html_() == page
