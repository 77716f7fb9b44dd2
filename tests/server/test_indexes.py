"""Index operations over HTTP, and what indexed queries return (recall against brute force)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import requests

from tests.support import assert_error
from tests.support.querykit import (
    brute_force,
    create_table,
    fsl,
    insert,
    ok,
    post,
    query,
    recall,
    sentences,
    vectors,
)

ROWS, DIM = 4000, 32


def make_table(http: requests.Session, base_url: str, table: str, rows: int = ROWS,
               dim: int = DIM) -> np.ndarray:
    data = vectors(rows, dim, seed=21)
    create_table(http, base_url, table, pa.table({
        "id": pa.array(range(rows)),
        "vec": fsl(data),
        "text": pa.array(sentences(rows)),
        "cat": pa.array([f"c{i % 6}" for i in range(rows)]),
        "tags": pa.array([[f"t{i % 3}", f"u{i % 5}"] for i in range(rows)]),
    }))
    return data


def indexes(http: requests.Session, base_url: str, table: str,
            **params: Any) -> dict[str, dict[str, Any]]:
    listed = ok(post(http, base_url, table, "index/list", **params))
    return {entry["index_name"]: entry for entry in listed["indexes"]}


def mean_recall(http: requests.Session, base_url: str, table: str, data: np.ndarray,
                **knobs: Any) -> float:
    queries = vectors(20, data.shape[1], seed=99)
    found = []
    for q in queries:
        result = query(http, base_url, table, {"vector": {"single_vector": q.tolist()}, "k": 10,
                                               "columns": {"column_names": ["id"]}, **knobs})
        found.append(recall(result["id"].to_pylist(), brute_force(data, q, 10)))
    return float(np.mean(found))


def describe_txn(http: requests.Session, base_url: str, txn: str) -> dict[str, Any]:
    return ok(http.post(f"{base_url}/v1/transaction/{txn}/describe", json={}))


# ------------------------------------------------------------------ vector indexes
def test_ivf_pq_recall_and_build_parameters(http: requests.Session, base_url: str,
                                            ns: str) -> None:
    table = f"{ns}$pq"
    data = make_table(http, base_url, table)
    built = ok(post(http, base_url, table, "create_index", {
        "column": "vec", "index_type": "IVF_PQ", "name": "vec_pq", "distance_type": "L2",
        "num_partitions": 8, "num_sub_vectors": 8, "num_bits": 8, "sample_rate": 64,
        "max_iterations": 10,
    }))
    assert describe_txn(http, base_url, built["transaction_id"])["status"] == "Succeeded"
    entry = indexes(http, base_url, table)["vec_pq"]
    assert entry["columns"] == ["vec"] and entry["index_type"] == "IVF_PQ"
    assert entry["num_indexed_rows"] == ROWS and entry["num_unindexed_rows"] == 0
    details = json.loads(entry["index_details"])
    assert details["compression"]["num_sub_vectors"] == 8
    assert details["runtime_hints"]["lance.ivf.max_iters"] == "10"
    assert details["runtime_hints"]["lance.ivf.sample_rate"] == "64"
    stats = ok(post(http, base_url, table, "index/vec_pq/stats"))
    assert stats["index_type"] == "IVF_PQ" and stats["distance_type"] == "l2"
    assert stats["num_indexed_rows"] == ROWS and stats["num_partitions"] == 8
    # Enough probes plus a refine step recovers the exact neighbours.
    assert mean_recall(http, base_url, table, data, nprobes=8, refine_factor=10) >= 0.9
    # One probe of eight partitions, no refinement: measurably worse.
    assert mean_recall(http, base_url, table, data, nprobes=1) < 0.9
    # bypass_vector_index is a flat search: exact.
    assert mean_recall(http, base_url, table, data, nprobes=1,
                       bypass_vector_index=True) == 1.0


def hnsw_table(http: requests.Session, base_url: str, table: str, *, num_partitions: int,
               m: int, ef_construction: int) -> np.ndarray:
    """A generated 3,000-row table with an IVF_HNSW_SQ index (l2) built as asked."""
    data = make_table(http, base_url, table, rows=3000)
    ok(post(http, base_url, table, "create_index", {
        "column": "vec", "index_type": "ivf_hnsw_sq", "num_partitions": num_partitions,
        "m": m, "ef_construction": ef_construction, "distance_type": "l2",
    }))
    return data


def test_ivf_hnsw_sq_recall_with_ef(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$hnsw"
    data = hnsw_table(http, base_url, table, num_partitions=4, m=16, ef_construction=100)
    entry = next(iter(indexes(http, base_url, table).values()))
    assert entry["index_type"] == "IVF_HNSW_SQ"
    assert json.loads(entry["index_details"])["hnsw"]["construction_ef"] == 100
    assert mean_recall(http, base_url, table, data, nprobes=4, ef=100, refine_factor=5) >= 0.9


def test_ef_reaches_lance(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$ef"
    # A sparse graph (m 4, one partition), so the search breadth decides what is found.
    data = hnsw_table(http, base_url, table, num_partitions=1, m=4, ef_construction=20)
    narrow = mean_recall(http, base_url, table, data, ef=10)
    wide = mean_recall(http, base_url, table, data, ef=200)
    assert narrow < 0.5 < 0.75 < wide, (narrow, wide)
    # Lance's own rule: the breadth cannot be below k.
    q = data[0].tolist()
    detail = assert_error(post(http, base_url, table, "query", {
        "vector": {"single_vector": q}, "k": 10, "ef": 5}), 400, 13)["detail"]
    assert "ef" in detail


def test_refine_factor_gives_exact_distances(http: requests.Session, base_url: str,
                                             ns: str) -> None:
    table = f"{ns}$refine"
    data = make_table(http, base_url, table, rows=2000, dim=16)
    ok(post(http, base_url, table, "create_index", {
        "column": "vec", "index_type": "IVF_PQ", "num_partitions": 2, "num_sub_vectors": 2,
    }))
    q = vectors(1, 16, seed=5)[0]

    def search(**knobs: Any) -> tuple[list[int], np.ndarray]:
        result = query(http, base_url, table, {"vector": {"single_vector": q.tolist()},
                                               "k": 10, "nprobes": 2, **knobs})
        return result["id"].to_pylist(), result["_distance"].to_numpy()

    exact = ((data - q) ** 2).sum(axis=1)
    approx_ids, approx = search()
    # Without refinement Lance reports the PQ codes' distances, not the vectors' ...
    assert not np.allclose(approx, exact[approx_ids], rtol=1e-3)
    # ... with it, it re-ranks k x refine_factor candidates on the vectors: with every
    # row a candidate (10 x 200), the exact neighbours and distances, whatever the
    # index's training drew (at 10 x 30 a true neighbour missed the candidates in one
    # run of many).
    refined_ids, refined = search(refine_factor=200)
    assert refined_ids == brute_force(data, q, 10)
    np.testing.assert_allclose(refined, exact[refined_ids], rtol=1e-4)
    assert refined_ids != approx_ids


def test_ivf_flat_is_exact_with_all_partitions(http: requests.Session, base_url: str,
                                               ns: str) -> None:
    table = f"{ns}$flat"
    data = make_table(http, base_url, table, rows=2000, dim=16)
    ok(post(http, base_url, table, "create_index", {"column": "vec", "index_type": "IVF_FLAT",
                                                    "num_partitions": 4}))
    assert mean_recall(http, base_url, table, data, nprobes=4) == 1.0


def test_cosine_index(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$cos"
    data = make_table(http, base_url, table, rows=2000, dim=16)
    ok(post(http, base_url, table, "create_index", {"column": "vec", "index_type": "IVF_FLAT",
                                                    "num_partitions": 2,
                                                    "distance_type": "cosine"}))
    stats = ok(post(http, base_url, table, "index/vec_idx/stats"))
    assert stats["distance_type"] == "cosine"
    q = data[3]
    result = query(http, base_url, table, {"vector": {"single_vector": q.tolist()}, "k": 5,
                                           "distance_type": "cosine", "nprobes": 2})
    assert result["id"].to_pylist() == brute_force(data, q, 5, "cosine")


def test_rows_inserted_after_the_index_are_found(http: requests.Session, base_url: str,
                                                 ns: str) -> None:
    table = f"{ns}$late"
    data = make_table(http, base_url, table, rows=2000, dim=16)
    ok(post(http, base_url, table, "create_index", {"column": "vec", "index_type": "IVF_PQ",
                                                    "num_partitions": 4,
                                                    "num_sub_vectors": 4}))
    # Warm the cache with the indexed version, so the insert must refresh it.
    query(http, base_url, table, {"vector": {"single_vector": data[0].tolist()}, "k": 1})
    far = np.full((1, 16), 5.0, dtype=np.float32)
    insert(http, base_url, table, pa.table({
        "id": pa.array([9999]), "vec": fsl(far), "text": pa.array(["late"]),
        "cat": pa.array(["c0"]), "tags": pa.array([["t0"]]),
    }))
    body = {"vector": {"single_vector": far[0].tolist()}, "k": 1}
    assert query(http, base_url, table, body)["id"].to_pylist() == [9999]
    assert indexes(http, base_url, table)["vec_idx"]["num_unindexed_rows"] == 1
    # fast_search only searches indexed rows.
    assert query(http, base_url, table, {**body, "fast_search": True})["id"][0].as_py() != 9999


# ------------------------------------------------------------------ scalar indexes
def test_scalar_indexes_keep_filters_exact(http: requests.Session, base_url: str,
                                           ns: str) -> None:
    table = f"{ns}$scalar"
    make_table(http, base_url, table, rows=1200, dim=8)
    for column, kind in (("id", "BTREE"), ("cat", "bitmap"), ("tags", "LABEL_LIST")):
        built = ok(post(http, base_url, table, "create_scalar_index",
                        {"column": column, "index_type": kind}))
        assert built["transaction_id"] and built["index_name"] == f"{column}_idx"
    listed = indexes(http, base_url, table)
    assert {n: (e["columns"], e["index_type"]) for n, e in listed.items()} == {
        "id_idx": (["id"], "BTREE"), "cat_idx": (["cat"], "BITMAP"),
        "tags_idx": (["tags"], "LABEL_LIST"),
    }
    result = query(http, base_url, table, {
        "filter": "id BETWEEN 100 AND 400 AND cat = 'c2' AND array_has_any(tags, ['u3'])"})
    expected = [i for i in range(100, 401) if i % 6 == 2 and i % 5 == 3]
    assert sorted(result["id"].to_pylist()) == expected


def test_fts_index_tokenizer_options(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$tok"
    create_table(http, base_url, table, pa.table({
        "id": pa.array(range(4)),
        "text": pa.array(["Running dogs", "the runner ran", "RUN now", "café au lait"]),
    }))
    built = ok(post(http, base_url, table, "create_index", {
        "column": "text", "index_type": "FTS", "name": "plain", "with_position": True,
        "base_tokenizer": "whitespace", "language": "English", "max_token_length": 20,
        "lower_case": False, "stem": False, "remove_stop_words": False, "ascii_folding": False,
    }))
    assert built["index_name"] == "plain"
    details = json.loads(indexes(http, base_url, table)["plain"]["index_details"])
    assert details["base_tokenizer"] == "whitespace" and details["with_position"] is True
    assert details["lower_case"] is False and details["stem"] is False
    assert details["max_token_length"] == 20 and details["ascii_folding"] is False

    def hits(word: str) -> list[int]:
        body = {"full_text_query": {"string_query": {"query": word, "columns": ["text"]}}}
        return sorted(query(http, base_url, table, body)["id"].to_pylist())

    assert hits("RUN") == [2] and hits("run") == []  # case kept, no stemming
    assert hits("the") == [1]  # stop words kept
    ok(post(http, base_url, table, "create_index", {"column": "text", "index_type": "FTS",
                                                    "name": "plain"}))  # replaced: defaults
    assert hits("run") == [0, 2]  # lower-cased and stemmed: "Running" and "RUN"
    assert hits("cafe") == [3]  # accents folded


# ---------------------------------------------------------------- list, stats, drop
def test_drop_index(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$drop"
    make_table(http, base_url, table, rows=300, dim=8)
    ok(post(http, base_url, table, "create_scalar_index", {"column": "id",
                                                           "index_type": "BTREE"}))
    assert "id_idx" in indexes(http, base_url, table)
    dropped = ok(post(http, base_url, table, "index/id_idx/drop"))
    assert describe_txn(http, base_url, dropped["transaction_id"])["status"] == "Succeeded"
    assert indexes(http, base_url, table) == {}
    assert_error(post(http, base_url, table, "index/id_idx/drop"), 404, 6)
    assert_error(post(http, base_url, table, "index/id_idx/stats"), 404, 6)
    assert query(http, base_url, table, {"filter": "id = 7"})["id"].to_pylist() == [7]


def test_create_index_without_replace_on_a_taken_name_is_409(http: requests.Session,
                                                            base_url: str, ns: str) -> None:
    table = f"{ns}$taken"
    make_table(http, base_url, table, rows=300, dim=8)
    built = ok(post(http, base_url, table, "create_index",
                    {"column": "vec", "index_type": "IVF_FLAT", "name": "tag_or_branch",
                     "num_partitions": 2}))
    ok(post(http, base_url, table, "create_index", {"column": "id", "index_type": "BTREE"}))
    before = indexes(http, base_url, table)
    version = ok(post(http, base_url, table, "describe"))["version"]
    for body in (
        # the same build again, a different kind of index, a different column, no name
        {"column": "vec", "index_type": "IVF_FLAT", "name": "tag_or_branch",
         "num_partitions": 2},
        {"column": "vec", "index_type": "IVF_PQ", "name": "tag_or_branch"},
        {"column": "cat", "index_type": "BITMAP", "name": "tag_or_branch"},
        {"column": "id", "index_type": "BTREE"},  # Lance names it id_idx, which exists
    ):
        error = assert_error(post(http, base_url, table, "create_index",
                                  {**body, "replace": False}), 409, 7)
        assert error["type"] == "/errors/conflict" and error["title"] == "Conflict"
        name = body.get("name", "id_idx")
        assert repr(name) in error["detail"] and "replace" in error["detail"], error
    # The same name on another column is refused even when replacing is allowed (Lance's
    # refusal, mapped to 409: a name holding "tag" or "branch" is no tag or branch error).
    for name in ("id_idx", "tag_or_branch"):
        error = assert_error(post(http, base_url, table, "create_scalar_index",
                                  {"column": "cat", "index_type": "BITMAP", "name": name}),
                             409, 7)
        assert name in error["detail"] and "/" not in error["detail"], error
    # Nothing was built, replaced or committed: same entries, uuids and creation times.
    assert indexes(http, base_url, table) == before
    assert ok(post(http, base_url, table, "describe"))["version"] == version == \
        built["version"] + 1
    # A free name with replace false builds as usual.
    ok(post(http, base_url, table, "create_index",
            {"column": "cat", "index_type": "BITMAP", "name": "cat_bm", "replace": False}))
    assert set(indexes(http, base_url, table)) == {"tag_or_branch", "id_idx", "cat_bm"}


def test_index_list_pages(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$pages"
    make_table(http, base_url, table, rows=200, dim=8)
    for column in ("id", "cat", "text"):
        ok(post(http, base_url, table, "create_scalar_index",
                {"column": column, "index_type": "BTREE"}))
    first = ok(post(http, base_url, table, "index/list", {"limit": 2}))
    assert len(first["indexes"]) == 2 and first["page_token"]
    rest = ok(post(http, base_url, table, "index/list",
                   {"limit": 2, "page_token": first["page_token"]}))
    names = [e["index_name"] for e in first["indexes"] + rest["indexes"]]
    assert sorted(names) == ["cat_idx", "id_idx", "text_idx"] and not rest.get("page_token")


def test_index_on_a_branch(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$br"
    make_table(http, base_url, table, rows=300, dim=8)
    assert http.post(f"{base_url}/v1/table/{table}/branches/create",
                     json={"name": "exp"}).status_code == 200
    ok(post(http, base_url, table, "create_scalar_index",
            {"column": "id", "index_type": "BTREE"}, branch="exp"))
    assert "id_idx" in indexes(http, base_url, table, branch="exp")
    assert indexes(http, base_url, table) == {}
    ok(post(http, base_url, table, "create_scalar_index",
            {"column": "cat", "index_type": "BITMAP", "branch": "exp"}))
    assert set(indexes(http, base_url, table, branch="exp")) == {"id_idx", "cat_idx"}
    clash = post(http, base_url, table, "create_scalar_index",
                 {"column": "id", "index_type": "BTREE", "branch": "exp"}, branch="other")
    assert_error(clash, 400, 13)
    assert_error(post(http, base_url, table, "index/list", branch="nope"), 404, 22)


def test_index_list_at_a_version(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$ver"
    made = create_table(http, base_url, table, pa.table({"id": pa.array(range(50))}))
    ok(post(http, base_url, table, "create_scalar_index", {"column": "id",
                                                           "index_type": "BTREE"}))
    assert indexes(http, base_url, table) != {}
    listed = ok(post(http, base_url, table, "index/list", {"version": made["version"]}))
    assert listed["indexes"] == []


@pytest.mark.parametrize(("action", "body", "status", "code", "named"), [
    ("create_index", {"column": "nope", "index_type": "BTREE"}, 404, 12, "nope"),
    ("create_index", {"index_type": "BTREE"}, 400, 13, "column"),
    ("create_index", {"column": "id"}, 400, 13, "index_type"),
    ("create_index", {"column": "id", "index_type": "SUPER"}, 400, 13, "SUPER"),
    ("create_index", {"column": "text", "index_type": "IVF_PQ"}, 400, 13, "vector index"),
    ("create_index", {"column": "vec", "index_type": "IVF_PQ", "distance_type": "taxicab"},
     400, 13, "taxicab"),
    ("create_index", {"column": "vec", "index_type": "IVF_PQ", "num_partitions": -4},
     400, 13, "num_partitions"),
    ("create_index", {"column": "vec", "index_type": "IVF_PQ", "num_sub_vectors": 5},
     400, 13, ""),
    ("create_index", {"column": "text", "index_type": "FTS", "base_tokenizer": "magic"},
     400, 13, "magic"),
    ("create_scalar_index", {"column": "vec", "index_type": "IVF_PQ"}, 400, 13, "create_index"),
    ("create_scalar_index", {"column": "vec", "index_type": "BITMAP"}, 400, 13, ""),
])
def test_bad_index_requests(http: requests.Session, base_url: str, ns: str, action: str,
                            body: dict[str, Any], status: int, code: int, named: str) -> None:
    table = f"{ns}$bad"
    make_table(http, base_url, table, rows=300, dim=8)
    error = assert_error(post(http, base_url, table, action, body), status, code)
    assert named in error["detail"]
    assert indexes(http, base_url, table) == {}  # nothing half-built


def test_index_operations_on_a_missing_table(http: requests.Session, base_url: str,
                                             ns: str) -> None:
    for action in ("create_index", "index/list", "index/x/stats", "index/x/drop"):
        assert_error(post(http, base_url, f"{ns}$none", action,
                          {"column": "id", "index_type": "BTREE"}), 404, 4)


def test_upstream_rest_client_builds_lists_and_queries(http: requests.Session, base_url: str,
                                                       ns: str) -> None:
    """pylance's own RestNamespace client (the namespace QueryTableRequest shape)."""
    from lance.namespace import RestNamespace
    from lance_namespace_urllib3_client.models import (
        CreateTableIndexRequest,
        DescribeTableIndexStatsRequest,
        ListTableIndicesRequest,
        QueryTableRequest,
        QueryTableRequestFullTextQuery,
        QueryTableRequestVector,
        StringFtsQuery,
    )

    data = make_table(http, base_url, f"{ns}$up", rows=400, dim=8)
    rest = RestNamespace(uri=base_url)  # type: ignore[no-untyped-call]
    ident = [ns, "up"]
    built = rest.create_table_index(CreateTableIndexRequest(
        id=ident, column="vec", index_type="IVF_FLAT", num_partitions=2))
    assert built.transaction_id
    listed = rest.list_table_indices(ListTableIndicesRequest(id=ident))
    assert [(i.index_name, i.columns, i.index_type) for i in listed.indexes] == [
        ("vec_idx", ["vec"], "IVF_FLAT")]
    stats = rest.describe_table_index_stats(DescribeTableIndexStatsRequest(
        id=ident, index_name="vec_idx"))
    assert stats.num_indexed_rows == 400 and stats.distance_type == "l2"
    found = rest.query_table(QueryTableRequest(
        id=ident, k=3, nprobes=2, vector=QueryTableRequestVector(single_vector=data[9].tolist())))
    table = pa.ipc.open_file(pa.BufferReader(found.data)).read_all()
    assert table["id"].to_pylist() == brute_force(data, data[9], 3)
    texts = rest.query_table(QueryTableRequest(
        id=ident, k=4, vector=QueryTableRequestVector(),
        full_text_query=QueryTableRequestFullTextQuery(
            string_query=StringFtsQuery(query="apple", columns=["text"]))))
    table = pa.ipc.open_file(pa.BufferReader(texts.data)).read_all()
    assert table.num_rows == 4 and "_score" in table.column_names
    assert all("apple" in t.split() for t in table["text"].to_pylist())
