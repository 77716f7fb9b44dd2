"""`POST /v1/table/{id}/query` over HTTP: vector search, filters, projection, versions, and
every way a body can be wrong."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, table_location
from tests.support.querykit import (
    brute_force,
    create_table,
    distances,
    fsl,
    insert,
    query,
    query_raw,
    vectors,
)
from tests.support.stores import StoreView

ROWS, DIM = 2000, 16


@pytest.fixture(scope="module")
def items(base_url: str, http: requests.Session) -> tuple[str, np.ndarray]:
    """A 2,000-row table with one vector column, a struct, and a category."""
    name = "qitems"
    assert http.post(f"{base_url}/v1/namespace/{name}/create", json={}).status_code == 200
    data = vectors(ROWS, DIM)
    ids = np.arange(ROWS)
    table = pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array([f"c{i % 4}" for i in ids]),
        "vec": fsl(data),
        "meta": pa.StructArray.from_arrays(
            [pa.array(ids % 7, pa.int32()), pa.array((ids % 10) / 10.0)], names=["bucket", "score"]
        ),
    })
    create_table(http, base_url, f"{name}$items", table)
    return f"{name}$items", data


def vec_body(q: np.ndarray, **extra: Any) -> dict[str, Any]:
    return {"vector": {"single_vector": q.tolist()}, **extra}


# ------------------------------------------------------------------ vector search
def test_single_vector_returns_exact_nearest(http: requests.Session, base_url: str,
                                             items: tuple[str, np.ndarray]) -> None:
    table, data = items
    q = vectors(1, DIM, seed=42)[0]
    result = query(http, base_url, table, vec_body(q, k=7))
    assert result.column_names == ["id", "category", "vec", "meta", "_distance"]
    assert result["id"].to_pylist() == brute_force(data, q, 7)
    expected = np.sort(distances(data, q))[:7]
    np.testing.assert_allclose(result["_distance"].to_numpy(), expected, rtol=1e-4)


@pytest.mark.parametrize(("given", "metric"), [
    ("cosine", "cosine"), ("COSINE", "cosine"), ("dot", "dot"), ("Inner_Product", "dot"),
    ("euclidean", "l2"), ("L2", "l2"),
])
def test_distance_types(http: requests.Session, base_url: str, items: tuple[str, np.ndarray],
                        given: str, metric: str) -> None:
    table, data = items
    q = vectors(1, DIM, seed=7)[0]
    result = query(http, base_url, table, vec_body(q, k=5, distance_type=given,
                                                    columns={"column_names": ["id"]}))
    assert result["id"].to_pylist() == brute_force(data, q, 5, metric)
    assert result.column_names == ["id", "_distance"]


def test_hamming_distance(http: requests.Session, base_url: str, ns: str) -> None:
    bits = np.random.default_rng(3).integers(0, 256, size=(300, 8), dtype=np.uint8)
    create_table(http, base_url, f"{ns}$h", pa.table({
        "id": pa.array(range(300)),
        "code": pa.FixedSizeListArray.from_arrays(pa.array(bits.ravel()), 8),
    }))
    q = bits[17]
    result = query(http, base_url, f"{ns}$h", vec_body(q, k=3, distance_type="hamming"))
    assert result["id"][0].as_py() == 17 and result["_distance"][0].as_py() == 0
    expected = np.unpackbits(bits ^ q, axis=1).sum(axis=1)
    got = result["_distance"].to_pylist()
    assert got == sorted(got) and got == sorted(expected.tolist())[:3]


def test_unknown_distance_type_is_400(http: requests.Session, base_url: str,
                                      items: tuple[str, np.ndarray]) -> None:
    table, data = items
    resp = query_raw(http, base_url, table, vec_body(data[0], distance_type="manhattan"))
    body = assert_error(resp, 400, 13)
    assert "manhattan" in body["detail"] and "cosine" in body["detail"]


def test_distance_bounds(http: requests.Session, base_url: str,
                         items: tuple[str, np.ndarray]) -> None:
    table, data = items
    q = data[5]
    all_d = np.sort(distances(data, q))
    lower, upper = float(all_d[10]), float(all_d[40])
    result = query(http, base_url, table, vec_body(q, k=100, lower_bound=lower,
                                                    upper_bound=upper))
    got = result["_distance"].to_numpy()
    assert len(got) == 30  # lower bound inclusive, upper exclusive
    assert (got >= lower - 1e-6).all() and (got < upper).all()
    bad = query_raw(http, base_url, table, vec_body(q, lower_bound=2.0, upper_bound=1.0))
    assert "lower_bound" in assert_error(bad, 400, 13)["detail"]


def test_offset_skips_nearest(http: requests.Session, base_url: str,
                              items: tuple[str, np.ndarray]) -> None:
    table, data = items
    q = vectors(1, DIM, seed=9)[0]
    result = query(http, base_url, table, vec_body(q, k=5, offset=3))
    assert result["id"].to_pylist() == brute_force(data, q, 8)[3:]


def test_k_defaults_to_ten_for_searches(http: requests.Session, base_url: str,
                                        items: tuple[str, np.ndarray]) -> None:
    table, data = items
    assert query(http, base_url, table, vec_body(data[0])).num_rows == 10
    assert query(http, base_url, table, vec_body(data[0], k=0)).num_rows == 10


def test_multi_vector_batch_returns_k_per_query(http: requests.Session, base_url: str,
                                                items: tuple[str, np.ndarray]) -> None:
    table, data = items
    qs = vectors(3, DIM, seed=11)
    result = query(http, base_url, table, {"vector": {"multi_vector": qs.tolist()}, "k": 4,
                                           "columns": {"column_names": ["id"]}})
    assert result.column_names == ["query_index", "id", "_distance"]
    for i, q in enumerate(qs):
        rows = result.filter(pc.equal(result["query_index"], i))
        assert rows["id"].to_pylist() == brute_force(data, q, 4)
    # offset applies to each query of the batch.
    shifted = query(http, base_url, table, {"vector": {"multi_vector": qs.tolist()}, "k": 2,
                                            "offset": 1})
    for i, q in enumerate(qs):
        rows = shifted.filter(pc.equal(shifted["query_index"], i))
        assert rows["id"].to_pylist() == brute_force(data, q, 3)[1:]


def late_interaction(docs: list[np.ndarray], q: np.ndarray, metric: str) -> np.ndarray:
    """Lance's multivector distance: the sum, over the query's vectors, of the distance
    to the row's closest vector (l2 squared, 1 - cosine similarity, 1 - dot product)."""
    out = []
    for doc in docs:
        if metric == "l2":
            dist = ((q[:, None, :] - doc[None, :, :]) ** 2).sum(axis=2)
        elif metric == "dot":
            dist = 1 - q @ doc.T
        else:
            dist = 1 - (q @ doc.T) / np.outer(np.linalg.norm(q, axis=1),
                                              np.linalg.norm(doc, axis=1))
        out.append(dist.min(axis=1).sum())
    return np.asarray(out)


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_multivector_column_is_one_late_interaction_query(http: requests.Session,
                                                          base_url: str, ns: str,
                                                          metric: str) -> None:
    rng = np.random.default_rng(5)
    # Rows hold 1 to 4 vectors each.
    docs = [rng.random((int(rng.integers(1, 5)), 8), dtype=np.float32) for _ in range(200)]
    mv_type = pa.list_(pa.list_(pa.float32(), 8))
    create_table(http, base_url, f"{ns}$mv", pa.table({
        "id": pa.array(range(200)),
        "mv": pa.array([d.tolist() for d in docs], mv_type),
    }))
    q = np.concatenate([docs[42][:1], rng.random((2, 8), dtype=np.float32)])
    result = query(http, base_url, f"{ns}$mv", {"vector": {"multi_vector": q.tolist()},
                                                "k": 10, "distance_type": metric})
    assert "query_index" not in result.column_names and result.num_rows == 10
    expected = late_interaction(docs, q, metric)
    order = np.argsort(expected, kind="stable")[:10]
    assert result["id"].to_pylist() == order.tolist()
    np.testing.assert_allclose(result["_distance"].to_numpy(), expected[order], rtol=1e-4,
                               atol=1e-4)
    # Row 42's own vectors as the query: each finds itself, at cosine distance 0.
    if metric == "cosine":
        own = query(http, base_url, f"{ns}$mv", {"vector": {"multi_vector": docs[42].tolist()},
                                                 "k": 1, "distance_type": "cosine"})
        assert own["id"].to_pylist() == [42]
        assert own["_distance"][0].as_py() == pytest.approx(0, abs=1e-4)


# ---------------------------------------------------------------- vector columns
@pytest.fixture(scope="module")
def nested(base_url: str, http: requests.Session) -> tuple[str, np.ndarray, np.ndarray]:
    name = "qnested"
    assert http.post(f"{base_url}/v1/namespace/{name}/create", json={}).status_code == 200
    top, inner = vectors(500, 8, seed=1), vectors(500, 4, seed=2)
    create_table(http, base_url, f"{name}$t", pa.table({
        "id": pa.array(range(500)),
        "vec": fsl(top),
        "meta": pa.StructArray.from_arrays([fsl(inner), fsl(inner * 2)], names=["emb", "x.y"]),
    }))
    return f"{name}$t", top, inner


@pytest.mark.parametrize("path", ["meta.emb", "`meta`.`emb`"])
def test_nested_vector_column(http: requests.Session, base_url: str,
                              nested: tuple[str, np.ndarray, np.ndarray], path: str) -> None:
    table, _, inner = nested
    q = inner[9]
    result = query(http, base_url, table, vec_body(q, k=4, vector_column=path,
                                                    columns={"column_names": ["id"]}))
    assert result["id"].to_pylist() == brute_force(inner, q, 4)


def test_backtick_quoted_segment_with_a_dot(http: requests.Session, base_url: str,
                                            nested: tuple[str, np.ndarray, np.ndarray]) -> None:
    table, _, inner = nested
    q = inner[3] * 2
    result = query(http, base_url, table, vec_body(q, k=3, vector_column="meta.`x.y`"))
    assert result["id"].to_pylist() == brute_force(inner * 2, q, 3)
    # The same path syntax in a filter and in column_names.
    scan = query(http, base_url, table, {"filter": "meta.`x.y` IS NOT NULL AND id < 4",
                                         "columns": {"column_names": ["id", "meta.`x.y`"]}})
    assert scan["id"].to_pylist() == [0, 1, 2, 3] and scan.num_columns == 2
    np.testing.assert_allclose(np.stack(scan.column(1).to_numpy(zero_copy_only=False)),
                               inner[:4] * 2)


@pytest.mark.parametrize(("path", "status", "named"), [
    ("emb", 404, "emb"),                      # a leaf alone names only top-level fields
    ("meta.nope", 404, "meta.nope"),
    ("meta.`we``ird`", 404, "meta.`we``ird`"),  # doubled backtick, shown canonically
    ("`meta`.`x.y`.deeper", 404, "meta.`x.y`.deeper"),
    ("meta.`x.y", 400, "unclosed"),
    ("meta..emb", 400, "empty segment"),
    ("id", 400, "not a vector"),
    ("", 400, "vector_column"),
])
def test_bad_vector_column(http: requests.Session, base_url: str,
                           nested: tuple[str, np.ndarray, np.ndarray], path: str, status: int,
                           named: str) -> None:
    table, top, _ = nested
    resp = query_raw(http, base_url, table, vec_body(top[0], vector_column=path))
    body = assert_error(resp, status, 12 if status == 404 else 13)
    assert named in body["detail"]
    if path == "emb":
        assert "meta.emb" in body["detail"]  # the hint names the canonical full path


def test_several_vector_columns_need_a_name(http: requests.Session, base_url: str,
                                            nested: tuple[str, np.ndarray, np.ndarray]) -> None:
    table, top, _ = nested
    body = assert_error(query_raw(http, base_url, table, vec_body(top[0])), 400, 13)
    assert "vec" in body["detail"] and "meta.emb" in body["detail"]
    assert "vector_column" in body["detail"]


def test_wrong_dimension_is_400(http: requests.Session, base_url: str,
                                items: tuple[str, np.ndarray]) -> None:
    table, _ = items
    body = assert_error(query_raw(http, base_url, table, vec_body(np.ones(3))), 400, 13)
    assert "16" in body["detail"] and "3" in body["detail"]


# ------------------------------------------------------------------------ filters
def test_filter_only_returns_every_matching_row(http: requests.Session, base_url: str,
                                                items: tuple[str, np.ndarray]) -> None:
    table, _ = items
    flt = "meta.bucket = 3 AND category = 'c1'"
    result = query(http, base_url, table, {"filter": flt})
    ids = np.arange(ROWS)
    expected = ids[(ids % 7 == 3) & (ids % 4 == 1)]
    assert sorted(result["id"].to_pylist()) == expected.tolist()
    assert all(m["bucket"] == 3 for m in result["meta"].to_pylist())
    assert set(result["category"].to_pylist()) == {"c1"}


def test_filter_only_limits(http: requests.Session, base_url: str,
                            items: tuple[str, np.ndarray]) -> None:
    table, _ = items
    # Upstream clients always send vector (null or empty) and k.
    for empty in (None, {}, {"single_vector": []}, {"single_vector": None, "multi_vector": []}):
        everything = query(http, base_url, table, {"vector": empty, "k": 0, "filter": "id < 50"})
        assert everything.num_rows == 50 and "_distance" not in everything.column_names
    assert query(http, base_url, table, {}).num_rows == ROWS
    five = query(http, base_url, table, {"filter": "id >= 100", "k": 5, "offset": 2})
    assert five["id"].to_pylist() == [102, 103, 104, 105, 106]


def test_postfilter_can_return_fewer_prefilter_returns_k(
        http: requests.Session, base_url: str, items: tuple[str, np.ndarray]) -> None:
    table, data = items
    q = vectors(1, DIM, seed=13)[0]
    flt = "id % 50 = 0"
    post = query(http, base_url, table, vec_body(q, k=10, filter=flt, prefilter=False))
    pre = query(http, base_url, table, vec_body(q, k=10, filter=flt, prefilter=True))
    assert all(i % 50 == 0 for i in post["id"].to_pylist() + pre["id"].to_pylist())
    assert post.num_rows < 10  # the 10 nearest rows were found first, then filtered
    assert pre.num_rows == 10
    candidates = np.arange(0, ROWS, 50)
    expected = candidates[brute_force(data[candidates], q, 10)]
    assert pre["id"].to_pylist() == expected.tolist()


def test_bad_filter_is_400(http: requests.Session, base_url: str,
                           items: tuple[str, np.ndarray]) -> None:
    table, data = items
    for body in ({"filter": "nosuch > 1"}, {"filter": "id >>> 2"},
                 vec_body(data[0], filter="id = 'x' AND")):
        detail = assert_error(query_raw(http, base_url, table, body), 400, 13)["detail"]
        assert "/tmp/" not in detail


def test_filter_with_trailing_text_is_400_not_ignored(
        http: requests.Session, base_url: str, items: tuple[str, np.ndarray]) -> None:
    # Lance stops parsing after the first complete expression: "id = 1 AMD ..." would
    # quietly mean "id = 1", and "id = 1) OR (true" would match every row.
    table, data = items
    for flt in ("id = 1 AMD category = 'c1'", "id = 1) OR (true"):
        for body in ({"filter": flt}, vec_body(data[0], k=5, filter=flt)):
            resp = query_raw(http, base_url, table, body)
            detail = assert_error(resp, 400, 13)["detail"]
            assert "/tmp/" not in detail
    assert "parentheses" in assert_error(
        query_raw(http, base_url, table, {"filter": "id = 1) OR (true"}), 400, 13)["detail"]
    # Parenthesised and commented conditions still work, and mean what they say.
    result = query(http, base_url, table, {"filter": "(id = 1 OR id = 2) -- two rows"})
    assert sorted(result["id"].to_pylist()) == [1, 2]


# --------------------------------------------------------------------- projection
def test_column_names_with_nested_paths(http: requests.Session, base_url: str,
                                        items: tuple[str, np.ndarray]) -> None:
    table, _ = items
    result = query(http, base_url, table, {"filter": "id < 3",
                                           "columns": {"column_names": ["meta.score", "id"]}})
    assert result.column_names == ["meta.score", "id"]
    assert result.to_pydict() == {"meta.score": [0.0, 0.1, 0.2], "id": [0, 1, 2]}


def test_column_aliases(http: requests.Session, base_url: str,
                        items: tuple[str, np.ndarray]) -> None:
    table, data = items
    aliases = {"ident": "id", "bucket": "meta.bucket", "twice": "id * 2"}
    result = query(http, base_url, table, {"filter": "id IN (4, 5)",
                                           "columns": {"column_aliases": aliases}})
    assert result.to_pydict() == {"ident": [4, 5], "bucket": [4, 5], "twice": [8, 10]}
    searched = query(http, base_url, table, vec_body(data[8], k=1,
                                                      columns={"column_aliases": {"n": "id"}}))
    assert searched.column_names == ["n", "_distance"] and searched["n"][0].as_py() == 8


def test_with_row_id(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$rowids"
    data = vectors(40, 4, seed=12)
    # Two fragments, so that row ids are not simply row numbers.
    create_table(http, base_url, t, pa.table({"id": pa.array(range(20)), "vec": fsl(data[:20])}))
    insert(http, base_url, t, pa.table({"id": pa.array(range(20, 40)), "vec": fsl(data[20:])}))
    scan = query(http, base_url, t, {"with_row_id": True, "columns": {"column_names": ["id"]}})
    assert scan.column_names == ["id", "_rowid"] and scan.schema.field("_rowid").type == pa.uint64()
    row_id = dict(zip(scan["id"].to_pylist(), scan["_rowid"].to_pylist(), strict=True))
    assert len(set(row_id.values())) == 40 and row_id[25] != 25
    # A search reports the same row id for the same row ...
    searched = query(http, base_url, t, vec_body(data[25], k=3, with_row_id=True))
    assert searched["id"][0].as_py() == 25
    assert searched["_rowid"].to_pylist() == [row_id[i] for i in searched["id"].to_pylist()]
    # ... and a filter on _rowid finds exactly that row again.
    for i in (3, 25, 39):
        again = query(http, base_url, t, {"filter": f"_rowid = {row_id[i]}", "with_row_id": True})
        assert again["id"].to_pylist() == [i] and again["_rowid"].to_pylist() == [row_id[i]]
    plain = query(http, base_url, t, {"filter": "id < 2"})
    assert "_rowid" not in plain.column_names


@pytest.mark.parametrize(("columns", "status"), [
    ({"column_names": ["id"], "column_aliases": {"a": "id"}}, 400),
    ({"column_names": []}, 400),
    ({"column_names": ["id", 3]}, 400),
    ({"column_aliases": {"a": ""}}, 400),
    ({"column_names": ["nope"]}, 404),
    ({"column_names": ["score"]}, 404),
    ({"column_aliases": {"a": "meta.nope"}}, 404),
    ("id", 400),
])
def test_bad_columns(http: requests.Session, base_url: str, items: tuple[str, np.ndarray],
                     columns: Any, status: int) -> None:
    table, _ = items
    resp = query_raw(http, base_url, table, {"columns": columns})
    assert_error(resp, status, 12 if status == 404 else 13)


# ----------------------------------------------------------- versions, branches
def test_version_time_travel(http: requests.Session, base_url: str, ns: str) -> None:
    data = vectors(40, 4)
    first = create_table(http, base_url, f"{ns}$v", pa.table({
        "id": pa.array(range(20)), "vec": fsl(data[:20])}))
    insert(http, base_url, f"{ns}$v", pa.table({"id": pa.array(range(20, 40)),
                                                "vec": fsl(data[20:])}))
    old = query(http, base_url, f"{ns}$v", {"version": first["version"]})
    assert old["id"].to_pylist() == list(range(20))
    assert query(http, base_url, f"{ns}$v", {}).num_rows == 40
    # Nearest to row 30 in version 1 cannot be row 30.
    near = query(http, base_url, f"{ns}$v", vec_body(data[30], k=1, version=first["version"]))
    assert near["id"][0].as_py() == brute_force(data[:20], data[30], 1)[0]
    missing = query_raw(http, base_url, f"{ns}$v", {"version": 99})
    assert "99" in assert_error(missing, 404, 11)["detail"]


def test_branch_query(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$b"
    create_table(http, base_url, t, pa.table({"id": pa.array(range(5))}))
    created = http.post(f"{base_url}/v1/table/{t}/branches/create", json={"name": "dev"})
    assert created.status_code == 200, created.text
    resp = http.post(f"{base_url}/v1/table/{t}/insert", params={"branch": "dev"},
                     data=ipc_stream(pa.table({"id": pa.array([100])})), headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert query(http, base_url, t, {"branch": "dev"}).num_rows == 6
    assert query(http, base_url, t, {"branch": "main"}).num_rows == 5
    assert query(http, base_url, t, {}).num_rows == 5
    assert_error(query_raw(http, base_url, t, {"branch": "nope"}), 404, 22)




# ------------------------------------------------------- writes behind our back
def test_cached_dataset_sees_writes_made_directly_with_lance(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    """Another process writing the table with pylance: the next request reads its data."""
    import lance

    t = f"{ns}$direct"
    data = vectors(30, 4, seed=8)
    create_table(http, base_url, t, pa.table({"id": pa.array(range(20)),
                                              "vec": fsl(data[:20])}))
    count = f"{base_url}/v1/table/{t}/count_rows"
    # Open the table through the server, so that it sits in the dataset cache.
    assert query(http, base_url, t, vec_body(data[25], k=1))["id"][0].as_py() != 25
    assert http.post(count, json={}).json() == 20
    location = table_location(http, base_url, t)
    assert store.sizes(location, "_versions")
    appended = lance.write_dataset(
        pa.table({"id": pa.array(range(20, 30)), "vec": fsl(data[20:])}), location,
        mode="append", storage_options=store.lance_options())
    assert appended.version == 2
    assert http.post(count, json={}).json() == 30
    assert query(http, base_url, t, vec_body(data[25], k=1))["id"].to_pylist() == [25]
    assert sorted(query(http, base_url, t, {"filter": "id >= 18"})["id"].to_pylist()) == \
        list(range(18, 30))
    store.dataset(location).delete("id % 2 = 1")
    assert http.post(count, json={}).json() == 15
    assert query(http, base_url, t, {"filter": "id >= 18"})["id"].to_pylist() == \
        [18, 20, 22, 24, 26, 28]
    assert query(http, base_url, t, vec_body(data[25], k=1))["id"][0].as_py() != 25
    # The versions written behind the server's back are there for time travel too.
    assert query(http, base_url, t, {"version": 2}).num_rows == 30


# ------------------------------------------------------------ body id vs path id
@pytest.mark.parametrize("body_id", [["other"], ["NS", "other"], ["NS", "T"], ["NS"],
                                     ["NS", "t", "x"], []])
def test_body_id_that_differs_from_the_path_is_400(
        http: requests.Session, base_url: str, ns: str, body_id: list[str]) -> None:
    t = f"{ns}$t"
    create_table(http, base_url, t, pa.table({"id": pa.array(range(10))}))
    create_table(http, base_url, f"{ns}$other", pa.table({"id": pa.array(range(3))}))
    wrong = [ns if part == "NS" else part for part in body_id]
    url = f"{base_url}/v1/table/{t}"
    for action, body in (("query", {"filter": "id < 5"}),
                         ("delete", {"predicate": "id < 5"}),
                         ("count_rows", {"predicate": "id < 5"})):
        detail = assert_error(http.post(f"{url}/{action}", json={**body, "id": wrong}),
                              400, 13)["detail"]
        assert "differs from the path id" in detail, (action, detail)
    # Nothing was deleted, from either table, and no version was written.
    assert http.post(f"{url}/count_rows", json={}).json() == 10
    assert http.post(f"{base_url}/v1/table/{ns}$other/count_rows", json={}).json() == 3
    assert http.post(f"{url}/describe", json={}).json()["version"] == 1
    # The same id as the path is accepted.
    same = {"id": [ns, "t"], "predicate": "id < 5"}
    assert http.post(f"{url}/count_rows", json=same).json() == 5
    assert query(http, base_url, t, {"id": [ns, "t"], "filter": "id < 5"}).num_rows == 5
    deleted = http.post(f"{url}/delete", json=same)
    assert deleted.status_code == 200, deleted.text
    assert http.post(f"{url}/count_rows", json={}).json() == 5


# -------------------------------------------------------------- malformed bodies
@pytest.mark.parametrize("body", [
    {"k": -1}, {"offset": -2}, {"nprobes": -1}, {"ef": -5}, {"refine_factor": -1},
    {"version": -1}, {"k": "ten"}, {"k": 1.5}, {"prefilter": "yes"}, {"filter": 3},
    {"vector": {"single_vector": [1.0] * DIM, "multi_vector": [[1.0] * DIM]}},
    {"vector": {"single_vector": ["a"] * DIM}},
    {"vector": "near"},
    {"vector": {"multi_vector": [[1.0] * DIM, []]}},
    {"with_row_id": 1},
    {"lower_bound": "low"},
])
def test_malformed_body_is_400(http: requests.Session, base_url: str,
                               items: tuple[str, np.ndarray], body: dict[str, Any]) -> None:
    table, _ = items
    assert_error(query_raw(http, base_url, table, body), 400, 13)


def test_missing_table_is_404(http: requests.Session, base_url: str, ns: str) -> None:
    assert_error(query_raw(http, base_url, f"{ns}$nope", {}), 404, 4)


def test_body_that_is_not_an_object_is_400(http: requests.Session, base_url: str,
                                           items: tuple[str, np.ndarray]) -> None:
    table, _ = items
    resp = http.post(f"{base_url}/v1/table/{table}/query", data=b"[1, 2]",
                     headers={"content-type": "application/json"})
    assert_error(resp, 400, 13)


def test_large_result_streams_as_a_valid_file(http: requests.Session, base_url: str,
                                              ns: str) -> None:
    """A result above the inline threshold is streamed; it must still be one IPC file."""
    rows = 40_000
    big = pa.table({"id": pa.array(range(rows)), "vec": fsl(vectors(rows, 32))})
    create_table(http, base_url, f"{ns}$big", big)
    resp = query_raw(http, base_url, f"{ns}$big", {})
    assert resp.status_code == 200
    assert "content-length" not in resp.headers  # chunked: it was streamed
    result = pa.ipc.open_file(pa.BufferReader(resp.content)).read_all()
    assert result.num_rows == rows
    assert sorted(result["id"].to_pylist()) == list(range(rows))


def test_dictionary_columns_written_twice_come_back_unified(
    http: requests.Session, base_url: str, ns: str
) -> None:
    # Two inserts carry different dictionaries (two pandas categoricals); an IPC file
    # holds one dictionary per field, so the server must unify them, not fail.
    t = f"{ns}$cats"
    kind = pa.dictionary(pa.int32(), pa.string())
    create_table(http, base_url, t, pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "kind": pa.array(["a", "b"]).dictionary_encode().cast(kind),
    }))
    insert(http, base_url, t, pa.table({
        "id": pa.array([3], pa.int64()),
        "kind": pa.array(["c"]).dictionary_encode().cast(kind),
    }))
    # A plain scan hands over each fragment's batches as stored (a filter re-batches).
    result = query(http, base_url, t, {}).sort_by("id")
    assert result.column("kind").type == kind
    assert result.column("kind").to_pylist() == ["a", "b", "c"]
    assert query(http, base_url, t, {"filter": "kind = 'c'"}).column("id").to_pylist() == [3]
