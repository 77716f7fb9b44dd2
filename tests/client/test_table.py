"""`Table` against the real server: metadata, reads, writes, versions, tags, branches, indexes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import (
    BranchNotFoundError,
    NotFoundError,
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


def test_optimize_on_a_branch_leaves_main_alone(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$small", items(10))
    for i in range(1, 4):
        tbl.insert(items(10, start=i * 10))
    main_version = tbl.version
    exp = tbl.create_branch("exp")
    exp.insert(items(5, start=100))
    result = exp.optimize()
    assert result.raw["fragments_added"] == 1
    assert exp.count_rows() == 45 and exp.version == result.version
    assert tbl.version == main_version and tbl.count_rows() == 40
    with pytest.raises(nsframe.ReadOnlyTableError):
        tbl.at(version=1).optimize()


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


def test_a_read_in_pages_keeps_the_version_of_its_first_page(
        tbl: nsframe.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    before = ids(tbl.to_arrow())
    written: list[int] = []

    def write_after_the_first_page(rows: int, nbytes: int) -> None:
        if not written:
            written.append(tbl.insert(items(5, start=1000)).version)

    whole = tbl.to_arrow(page_rows=7, progress=write_after_the_first_page)
    assert ids(whole) == before
    assert written and tbl.count_rows() == len(before) + 5
    # The first page's answer names its version: a read that fits in it is one request.
    sent: list[str] = []
    request = tbl._client.request
    monkeypatch.setattr(tbl._client, "request",
                        lambda method, template, *a, **kw: sent.append(template)
                        or request(method, template, *a, **kw))
    assert tbl.to_arrow().num_rows == len(before) + 5
    assert len(sent) == 1


def test_to_arrow_max_rows_guard(tbl: nsframe.Table) -> None:
    with pytest.raises(ValueError, match="max_rows=10"):
        tbl.to_arrow(max_rows=10)
    assert tbl.to_arrow(max_rows=None).num_rows == 20
    assert tbl.to_arrow(max_rows=10, filter="id < 10").num_rows == 10


@pytest.mark.parametrize(("page_rows", "max_rows"),
                         [(7, None), (10, None), (20, None), (21, None), (5, 20), (100, 20)])
def test_to_arrow_at_every_page_boundary(tbl: nsframe.Table, page_rows: int,
                                         max_rows: int | None) -> None:
    assert ids(tbl.to_arrow(page_rows=page_rows, max_rows=max_rows)) == list(range(20))


def test_to_arrow_max_rows_guard_counts_what_matches(tbl: nsframe.Table) -> None:
    assert tbl.to_arrow(max_rows=20).num_rows == 20
    with pytest.raises(ValueError, match="has 20 matching rows, more than max_rows=19"):
        tbl.to_arrow(max_rows=19)
    with pytest.raises(ValueError, match="has 15 matching rows, more than max_rows=5"):
        tbl.to_arrow(max_rows=5, page_rows=3, filter="id >= 5")


def test_a_read_that_fits_one_page_sends_no_count(conn: nsframe.Connection,
                                                  tbl: nsframe.Table) -> None:
    # With a filter a count is a scan of its own: a one-page result must not pay for it.
    sent: list[str] = []
    inner = conn.client.transport

    class Recording:  # a transport of one's own: records each route, then sends
        def send(self, method: str, url: str, **options: Any) -> Any:
            sent.append(url.split("?")[0].rsplit("/", 1)[-1])
            return inner.send(method, url, **options)

        def close(self) -> None:
            inner.close()

    conn.client.transport = Recording()
    assert ids(tbl.to_arrow(filter="id >= 5")) == list(range(5, 20))
    assert sent.count("query") == 1 and "count_rows" not in sent
    sent.clear()
    # Several pages: one count, for the total and the progress bar, then the rest.
    assert ids(tbl.to_arrow(filter="id >= 5", page_rows=4)) == list(range(5, 20))
    assert sent.count("count_rows") == 1 and sent.count("query") == 4


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
    assert "count_rows" in repr(info.value) and info.value.method == "POST"


@pytest.mark.parametrize("call", [
    pytest.param({}, id="no-arguments"),
    pytest.param({"index_type": "IVF_PQ", "distance_type": "cosine", "num_partitions": 64},
                 id="the-guide's-call"),
    pytest.param({"index_type": "IVF_HNSW_PQ"}, id="hnsw-pq"),
])
def test_create_index_works_out_what_the_call_leaves_out(
    conn: nsframe.Connection, ns: str, call: dict[str, object]
) -> None:
    """pylance requires num_sub_vectors for PQ types ("num_partitions and num_sub_vectors
    are required"); the server now derives it from the column's width, as LanceDB does."""
    table = conn.create_table(f"{ns}$wide", items(1000, dim=384))
    built = table.create_index("vector", **call)
    assert built.columns == ("vector",)
    query = items(1, start=7, dim=384).column("vector")[0].values.to_numpy()
    assert table.search(query).limit(10).to_arrow().num_rows == 10


@pytest.mark.parametrize(("dimension", "expected"), [(384, 24), (128, 8), (100, 10),
                                                     (7, 1), (1536, 96), (12, 1)])
def test_default_pq_sub_vectors_divide_the_dimension(dimension: int, expected: int) -> None:
    from nsframe.server._routes.indexes import default_num_sub_vectors

    assert default_num_sub_vectors(dimension) == expected
    assert dimension % expected == 0


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
    assert repr(tbl) == f"Table({tbl.id!r}, main)"  # no request (test_reprs_need_no_server)
    assert repr(tbl.at(version=1)) == f"Table({tbl.id!r}, main, version 1)"
    assert repr(tbl.branch("dev")) == f"Table({tbl.id!r}, dev)"
    page = tbl._repr_html_()
    assert "<table>" in page and "dim 4" in page and "20 rows" in page
    assert tbl._repr_html_() == page


def count_pages(monkeypatch: pytest.MonkeyPatch, client: nsframe.Client,
                method: str) -> list[str | None]:
    """Record the page_token of every call of ``client.<method>``."""
    tokens: list[str | None] = []
    original = getattr(client, method)

    def recording(*args: object, **kwargs: object) -> object:
        tokens.append(kwargs.get("page_token"))  # type: ignore[arg-type]
        return original(*args, **kwargs)

    monkeypatch.setattr(client, method, recording)
    return tokens


def test_versions_tags_and_branches_follow_page_tokens(
        conn: nsframe.Connection, tbl: nsframe.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        tbl.insert(items(1, start=100 + i))
    for version in range(1, 6):
        tbl.create_tag(f"v{version}", version)
        tbl.create_branch(f"b{version}", from_version=version)
    conn.client.page_size = 2  # five of each: three pages
    calls = {m: count_pages(monkeypatch, conn.client, m)
             for m in ("list_versions", "list_tags", "list_branches")}
    assert [v.version for v in tbl.versions()] == [1, 2, 3, 4, 5]
    tags = tbl.tags()
    assert {name: tag.version for name, tag in tags.items()} == {f"v{i}": i for i in range(1, 6)}
    branches = tbl.branches()
    assert {name: b.parent_version for name, b in branches.items()} == \
        {f"b{i}": i for i in range(1, 6)}
    for method, tokens in calls.items():
        # versions() lists the tags too, to show the tags on each version.
        pages = 6 if method == "list_tags" else 3
        assert len(tokens) == pages, method
        assert tokens[0] is None and all(tokens[1:3]) and tokens[3:4] in ([], [None]), method


def test_list_indices_follows_page_tokens(conn: nsframe.Connection, ns: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tbl = conn.create_table(f"{ns}$indexed",
                            {"a": list(range(50)), "b": list(range(50)), "c": list(range(50))})
    for column in ("a", "b", "c"):
        tbl.create_scalar_index(column, name=f"{column}_idx")
    conn.client.page_size = 2
    tokens = count_pages(monkeypatch, conn.client, "list_indices")
    assert [i.name for i in tbl.list_indices()] == ["a_idx", "b_idx", "c_idx"]
    assert len(tokens) == 2 and tokens[0] is None and tokens[1]
    assert [i.columns for i in tbl.at(version=tbl.version).list_indices()] == \
        [("a",), ("b",), ("c",)]


def test_stats(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$stats", items(20))
    tbl.insert(items(10, start=20))
    tbl.create_scalar_index("id", name="id_idx")
    stats = tbl.stats()
    assert isinstance(stats, nsframe.TableStatistics)
    assert stats.num_rows == 30 and stats.num_indices == 1
    assert isinstance(stats.fragment_stats, nsframe.FragmentStatistics)
    assert stats.fragment_stats.num_fragments == 2
    assert stats.total_bytes is not None and stats.total_bytes > 30 * 4 * DIM
    # The server's stats route answered, not the client's fallback: only it reports the
    # rows per fragment (20 and 10; nearest-rank percentiles, mean rounded down).
    assert stats.fragment_stats.num_small_fragments == 2
    assert stats.fragment_stats.lengths == {"min": 10, "max": 20, "mean": 15, "p25": 10,
                                            "p50": 20, "p75": 20, "p99": 20}
    # A branch handle reports its branch; a missing table is the table's error.
    exp = tbl.create_branch("exp")
    exp.delete("id >= 10")
    assert exp.stats().num_rows == 10 and tbl.stats().num_rows == 30
    with pytest.raises(TableNotFoundError):
        conn.table(f"{ns}$ghost").stats()


def test_stats_on_a_server_without_the_route(conn: nsframe.Connection, ns: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tbl = conn.create_table(f"{ns}$old", items(20))
    tbl.insert(items(10, start=20))
    served = tbl.stats()

    def no_such_route(*args: object, **kwargs: object) -> object:
        raise NotFoundError("There is no operation at /v1/table/x/stats.", status=404, code=0)

    monkeypatch.setattr(conn.client, "table_stats", no_such_route)
    fallback = tbl.stats()
    assert (fallback.total_bytes, fallback.num_rows, fallback.num_indices) == \
        (served.total_bytes, 30, 0)
    assert fallback.fragment_stats == nsframe.FragmentStatistics(num_fragments=2)


def test_stats_models_read_the_upstream_answer() -> None:
    answer = {"total_bytes": 4096, "num_rows": 30, "num_indices": 2,
              "fragment_stats": {"num_fragments": 3, "num_small_fragments": 3,
                                 "lengths": {"min": 5, "max": 15, "mean": 10.0, "p50": 10}}}
    stats = nsframe.TableStatistics.from_json(answer)
    assert (stats.total_bytes, stats.num_rows, stats.num_indices) == (4096, 30, 2)
    assert stats.fragment_stats == nsframe.FragmentStatistics(
        num_fragments=3, num_small_fragments=3,
        lengths={"min": 5, "max": 15, "mean": 10.0, "p50": 10})
    assert stats.raw is answer


def test_describe_version(tbl: nsframe.Table) -> None:
    tbl.delete("id >= 10")
    latest = tbl.describe_version()
    assert isinstance(latest, nsframe.Version)
    assert latest.version == 2 and latest.metadata["operation"] == "Delete"
    first = tbl.describe_version(1)
    assert first.version == 1 and first.timestamp is not None
    assert first == tbl.versions()[0]
    assert tbl.at(version=1).describe_version() == first  # a view describes its version
    with pytest.raises(VersionNotFoundError):
        tbl.describe_version(99)
    exp = tbl.create_branch("exp", from_version=1)
    exp.insert(items(1, start=500))
    on_branch = exp.describe_version()
    assert on_branch.raw["branch"] == "exp" and on_branch.version == 2


def test_hnsw_ef_nprobes_and_refine_factor_change_results(conn: nsframe.Connection,
                                                          ns: str) -> None:
    rng = np.random.default_rng(7)
    n, dim = 3_000, 32
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    tbl = conn.create_table(f"{ns}$hnsw", pa.table({
        "id": pa.array(range(n), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
    }))
    # A sparse graph (m=4) over four partitions, so that search effort shows.
    tbl.create_index("vector", "IVF_HNSW_SQ", num_partitions=4, m=4, ef_construction=20,
                     distance_type="l2")
    assert [i.index_type for i in tbl.list_indices()] == ["IVF_HNSW_SQ"]
    queries = rng.standard_normal((20, dim)).astype(np.float32)
    exact = [ids(tbl.search(q).limit(10).bypass_vector_index().to_arrow()) for q in queries]

    def recall(tune: Callable[[nsframe.Query], nsframe.Query]) -> float:
        found = [ids(tune(tbl.search(q).limit(10)).to_arrow()) for q in queries]
        return sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True)) / 200

    assert tbl.search(queries[0]).ef(10).request_body()["ef"] == 10
    low_ef = recall(lambda q: q.nprobes(4).ef(10))
    high_ef = recall(lambda q: q.nprobes(4).ef(1000))
    one_probe = recall(lambda q: q.nprobes(1).ef(1000))
    assert low_ef < high_ef - 0.1, (low_ef, high_ef)
    assert one_probe < high_ef - 0.2, (one_probe, high_ef)
    assert high_ef > 0.85

    # SQ distances are approximate; refine_factor re-ranks with exact ones.
    def true_distances(q: np.ndarray, found: pa.Table) -> np.ndarray:
        rows = vectors[np.array(found.column("id").to_pylist())]
        return np.sum((rows - q) ** 2, axis=1)

    approximate_error = 0.0
    for q in queries:
        plain = tbl.search(q).limit(10).nprobes(4).ef(1000).to_arrow()
        approximate_error = max(approximate_error, float(np.max(np.abs(
            plain.column("_distance").to_numpy() - true_distances(q, plain)))))
        refined = tbl.search(q).limit(10).nprobes(4).ef(1000).refine_factor(2).to_arrow()
        got = refined.column("_distance").to_numpy()
        np.testing.assert_allclose(got, true_distances(q, refined), rtol=1e-5, atol=1e-4)
        assert list(got) == sorted(got)
    assert approximate_error > 1e-3
