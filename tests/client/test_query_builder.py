"""The immutable query builder: the body it sends, and the rows the real server returns."""

from __future__ import annotations

import socket
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import InvalidInputError, NsframeError, TransportError

DIM = 4


def make(n: int = 50) -> pa.Table:
    # Vector i is (i, 0, 0, 0): distances to (x, 0, 0, 0) are predictable.
    vectors = np.zeros((n, DIM), dtype=np.float32)
    vectors[:, 0] = np.arange(n)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "text": [f"doc {'apple' if i % 5 == 0 else 'pear'} number {i}" for i in range(n)],
        "meta": pa.array([{"year": 2000 + i} for i in range(n)]),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
    })


@pytest.fixture
def tbl(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    return conn.create_table(f"{ns}$docs", make())


@pytest.fixture
def offline() -> nsframe.Table:
    # A table on a closed port: building queries must work without any server.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    conn = nsframe.connect(f"http://127.0.0.1:{port}", retries=0, timeout=2)
    return conn.table("db$t")


def test_every_call_returns_a_new_query(offline: nsframe.Table) -> None:
    base = offline.search([1, 2, 3, 4])
    before = base.request_body()
    limited = base.limit(3)
    filtered = limited.where("id > 2", prefilter=True)
    assert base.request_body() == before
    assert limited.request_body()["k"] == 3 and "filter" not in limited.request_body()
    assert filtered.request_body()["filter"] == "id > 2"
    assert filtered.request_body()["prefilter"] is True
    assert base is not limited is not filtered


def test_nothing_is_sent_before_a_terminal(offline: nsframe.Table) -> None:
    query = (offline.search(np.ones(DIM)).where("id > 1").select(["id"]).limit(5).offset(2)
             .distance_type("cosine").nprobes(4).refine_factor(2).ef(16).fast_search()
             .bypass_vector_index().distance_range(0.0, 1.5).with_row_id().at(3))
    assert query.request_body() == {
        "vector": {"single_vector": [1.0, 1.0, 1.0, 1.0]},
        "k": 5,
        "offset": 2,
        "filter": "id > 1",
        "prefilter": True,
        "columns": {"column_names": ["id"]},
        "distance_type": "cosine",
        "nprobes": 4,
        "refine_factor": 2,
        "ef": 16,
        "fast_search": True,
        "bypass_vector_index": True,
        "lower_bound": 0.0,
        "upper_bound": 1.5,
        "with_row_id": True,
        "version": 3,
    }
    with pytest.raises(TransportError):
        query.to_arrow()


def test_body_shapes(offline: nsframe.Table) -> None:
    multi = offline.search([[1, 0], [0, 1]], column="emb").request_body()
    assert multi["vector"] == {"multi_vector": [[1.0, 0.0], [0.0, 1.0]]}
    assert multi["vector_column"] == "emb"
    text = offline.search(text="apple", fts_columns=["text"]).request_body()
    assert text["full_text_query"] == {"string_query": {"query": "apple", "columns": ["text"]}}
    assert text["k"] == 10
    assert offline.search("pear").request_body()["full_text_query"] == {
        "string_query": {"query": "pear"}}
    aliases = offline.search().select({"y": "meta.year"}).request_body()
    assert aliases["columns"] == {"column_aliases": {"y": "meta.year"}}
    assert aliases["k"] == 0 and aliases["vector"] == {}
    assert offline.search().branch("exp").request_body()["branch"] == "exp"


@pytest.mark.parametrize("bad", [
    pytest.param(lambda q: q.limit(-1), id="negative-limit"),
    pytest.param(lambda q: q.offset(-2), id="negative-offset"),
    pytest.param(lambda q: q.nprobes(-1), id="negative-nprobes"),
    pytest.param(lambda q: q.distance_type("manhattan"), id="unknown-metric"),
    pytest.param(lambda q: q.where(""), id="empty-filter"),
])
def test_bad_builder_arguments_are_value_errors(offline: nsframe.Table, bad: object) -> None:
    with pytest.raises(ValueError):
        bad(offline.search([1.0]))  # type: ignore[operator]


def test_select_rejects_a_plain_string(offline: nsframe.Table) -> None:
    with pytest.raises(TypeError):
        offline.search().select("id")



@pytest.mark.parametrize("vector", [
    pytest.param(np.array([0.5, np.nan, 1.0], dtype=np.float32), id="numpy-nan"),
    pytest.param([0.5, 1.0, float("inf")], id="list-inf"),
    pytest.param(np.array([[0.0, 1.0, 2.0], [1.0, -np.inf, 0.0]]), id="numpy-multi"),
    pytest.param([[0.0, 1.0, 2.0], [float("nan"), 1.0, 0.0]], id="list-multi"),
])
def test_a_query_vector_must_be_finite(offline: nsframe.Table, vector: Any) -> None:
    # JSON cannot carry NaN or infinity: the builder names the position instead of
    # sending a body each JSON encoder would write differently.
    with pytest.raises(ValueError, match=r"(The query vector|Vector 1 of the query) holds \S+ at "
                                         r"position [012]: a search needs finite"):
        offline.search(vector)


def test_vector_bodies_from_arrays_and_lists_agree(offline: nsframe.Table) -> None:
    as_array = offline.search(np.array([0.25, 1.0, -3.5], dtype=np.float32)).request_body()
    as_list = offline.search([0.25, 1, -3.5]).request_body()
    assert as_array["vector"] == as_list["vector"] == {"single_vector": [0.25, 1.0, -3.5]}
    assert all(type(x) is float for x in as_list["vector"]["single_vector"])
    # Large finite numbers whose sum overflows are still finite.
    big = offline.search([1e308, 1e308]).request_body()
    assert big["vector"] == {"single_vector": [1e308, 1e308]}

def test_vector_search_returns_nearest(tbl: nsframe.Table) -> None:
    rows = tbl.search([10, 0, 0, 0]).limit(3).select(["id"]).to_list()
    assert [r["id"] for r in rows] == [10, 9, 11] or [r["id"] for r in rows] == [10, 11, 9]
    assert rows[0]["_distance"] == 0.0
    assert sorted(r["_distance"] for r in rows[1:]) == [1.0, 1.0]


def test_filter_offset_and_terminals(tbl: nsframe.Table) -> None:
    query = tbl.search([0, 0, 0, 0]).where("id >= 20", prefilter=True).select(["id"]).limit(3)
    assert [r["id"] for r in query.to_list()] == [20, 21, 22]
    assert [r["id"] for r in query.offset(1).to_list()] == [21, 22, 23]
    df = query.to_pandas()
    assert isinstance(df, pd.DataFrame) and df["id"].tolist() == [20, 21, 22]
    pl_df = query.to_polars()
    assert isinstance(pl_df, pl.DataFrame) and pl_df["id"].to_list() == [20, 21, 22]
    assert query.to_arrow().column("id").to_pylist() == [20, 21, 22]


def test_plain_scan_and_aliases(tbl: nsframe.Table) -> None:
    rows = tbl.search().where("id < 3").select({"year": "meta.year", "key": "id"}).to_list()
    assert sorted((r["key"], r["year"]) for r in rows) == [(0, 2000), (1, 2001), (2, 2002)]
    assert tbl.search().to_arrow().num_rows == 50


def test_distance_type_range_and_row_id(tbl: nsframe.Table) -> None:
    near = tbl.search([5, 0, 0, 0]).distance_range(0.0, 1.5).limit(50).to_arrow()
    assert sorted(near.column("id").to_pylist()) == [4, 5, 6]
    cosine = tbl.search([1, 0, 0, 0]).distance_type("cosine").limit(2).to_arrow()
    assert cosine.num_rows == 2 and cosine.column("_distance")[0].as_py() == pytest.approx(0)
    with_ids = tbl.search([1, 0, 0, 0]).with_row_id().limit(2).to_arrow()
    assert "_rowid" in with_ids.column_names
    exact = tbl.search([3, 0, 0, 0]).bypass_vector_index().limit(1).to_list()
    assert exact[0]["id"] == 3
    # fast_search looks at indexed rows only, and this table has no index yet.
    assert tbl.search([3, 0, 0, 0]).fast_search().limit(1).to_list() == []


def test_full_text_search(tbl: nsframe.Table) -> None:
    hits = tbl.search(text="apple", fts_columns=["text"]).limit(20).select(["id"]).to_list()
    assert sorted(r["id"] for r in hits) == list(range(0, 50, 5))
    assert all("_score" in r for r in hits)


def test_hybrid_search_fuses_both_lists(tbl: nsframe.Table) -> None:
    # Nearest to (7,0,0,0): 7, then 6 and 8. 'apple' is in every fifth row.
    rows = tbl.search([7, 0, 0, 0], text="apple", fts_columns=["text"]).limit(3).to_list()
    assert len(rows) == 3
    scores = [r["_relevance_score"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    # Each row came from one list or both: its distance or its score says which.
    for row in rows:
        assert row["_distance"] is not None or row["_score"] is not None
        if row["_score"] is not None:
            assert "apple" in row["text"]
    # Each list holds 3 rows and none is in both (the apple rows nearest 7 are 5 and 10,
    # at distances 2 and 3): the two rank-1 rows share 1 / (60 + 1), then a rank 2 row.
    assert scores == pytest.approx([1 / 61, 1 / 61, 1 / 62])
    top = {r["id"]: r for r in rows[:2]}
    assert 7 in top and top[7]["_distance"] == 0 and top[7]["_score"] is None
    (apple,) = (r for i, r in top.items() if i != 7)
    assert apple["id"] % 5 == 0 and apple["_distance"] is None


def test_query_at_version_and_branch(tbl: nsframe.Table) -> None:
    tbl.delete("id < 10")
    assert tbl.search().to_arrow().num_rows == 40
    assert tbl.search().at(1).to_arrow().num_rows == 50
    assert tbl.at(version=1).search([0, 0, 0, 0]).limit(1).to_list()[0]["id"] == 0
    exp = tbl.create_branch("exp")
    exp.delete("id < 20")
    assert tbl.search().branch("exp").to_arrow().num_rows == 30
    assert tbl.search().to_arrow().num_rows == 40


def test_server_errors_surface_as_api_errors(tbl: nsframe.Table) -> None:
    with pytest.raises(InvalidInputError) as info:
        tbl.search().where("id >>>> 3").to_arrow()
    assert info.value.status == 400 and info.value.detail
    with pytest.raises(NsframeError):
        tbl.search([1.0, 2.0]).select(["nope"]).to_arrow()


def test_repr_shows_the_request(offline: nsframe.Table) -> None:
    query = offline.search([1, 2]).limit(2)
    assert repr(query) == "Query on 'db$t' (main): vector search, limit 2\n  vector: [1.0, 2.0]"
    page = query._repr_html_()
    assert "POST /v1/table/db$t/query" in page and "single_vector" in page
    assert page == query._repr_html_()


def test_reprs_abbreviate_vectors(offline: nsframe.Table) -> None:
    query = offline.search(np.linspace(0, 1, 384)).where("x > 1").select(["id"]).limit(3)
    text = repr(query)
    assert len(text.splitlines()) == 4 and len(text) < 300
    assert "vector: [0.0, 0.0026, 0.0052, …] (384)" in text
    assert "where (before the search): x > 1" in text
    page = query._repr_html_()
    assert "(384)" in page and page.count("\n") < 10 and len(page) < 1500


# ---------------------------------------------------------------------- issue points
def test_a_filtered_search_filters_first_by_default(tbl: nsframe.Table) -> None:
    # Rows 0-49, vector i = (i, 0, 0, 0): the 3 nearest to 0 are 0, 1, 2, and only 0 of
    # them is a multiple of 5 ("apple"). LanceDB's default filters first: 3 apples.
    near = tbl.search([0, 0, 0, 0]).select(["id"]).limit(3)
    pre = near.where("id % 5 = 0").to_arrow().column("id").to_pylist()
    assert pre == [0, 5, 10]
    post = near.where("id % 5 = 0").postfilter().to_arrow().column("id").to_pylist()
    assert post == [0]
    assert near.where("id % 5 = 0", prefilter=False).to_arrow().num_rows == 1
    assert near.where("id % 5 = 0", False).to_arrow().num_rows == 1  # LanceDB's positional
    words = tbl.search(text="apple").where("id >= 40").select(["id"]).limit(3).to_arrow()
    assert sorted(words.column("id").to_pylist()) == [40, 45]


def test_where_calls_combine_with_and(offline: nsframe.Table) -> None:
    query = offline.search().where("a = 1 OR b = 2").where("c = ?", [3])
    assert query.request_body()["filter"] == "(a = 1 OR b = 2) AND (c = 3)"
    assert query.where("d", prefilter=False).prefilter is False
    assert query.where("d", prefilter=False).where("e").prefilter is False  # kept


def test_where_calls_combine_against_the_server(tbl: nsframe.Table) -> None:
    rows = tbl.search().where("id < 10").where("id >= 5 OR id = 0").to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [0, 5, 6, 7, 8, 9]


@pytest.mark.parametrize("make_query", [
    pytest.param(lambda t: t.search(), id="scan"),
    pytest.param(lambda t: t.search().where("id > 3"), id="filter"),
    pytest.param(lambda t: t.search([1, 0, 0, 0]), id="vector"),
    pytest.param(lambda t: t.search(text="apple"), id="text"),
    pytest.param(lambda t: t.search([1, 0, 0, 0], text="apple"), id="hybrid"),
])
def test_limit_zero_returns_no_rows(tbl: nsframe.Table, make_query: Any) -> None:
    query = make_query(tbl).select(["id", "text"])
    empty = query.limit(0).to_arrow()
    assert empty.num_rows == 0
    assert empty.schema == query.limit(1).to_arrow().schema  # the columns a row would have
    assert query.limit(0).to_pandas().empty
    assert len(tbl.search().limit(None).to_arrow()) == 50  # None: the default, every row


def test_explain_is_a_deprecated_name_of_request_body(offline: nsframe.Table) -> None:
    query = offline.search([1, 2])
    with pytest.warns(DeprecationWarning, match="request_body"):
        assert query.explain() == query.request_body()


@pytest.fixture
def many(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    # An answer over 4 MiB: the server streams it and the client decodes it batch by
    # batch (smaller ones are read whole, and reported once).
    n = 400_000
    return conn.create_table(f"{ns}$many", {"id": np.arange(n), "x": np.arange(n) * 0.5})


def test_query_progress_callback_counts_batches_as_they_arrive(many: nsframe.Table) -> None:
    calls: list[tuple[int, int]] = []
    got = many.search().to_arrow(progress=lambda rows, sent: calls.append((rows, sent)))
    assert got.num_rows == 400_000
    assert len(calls) > 1  # several batches, each reported
    rows = [r for r, _ in calls]
    assert rows == sorted(rows) and rows[-1] == 400_000
    assert calls[-1][1] >= got.nbytes
    frame = many.search().where("id < 300000").to_pandas(
        progress=lambda rows, sent: calls.append((rows, sent)))
    assert len(frame) == 300_000 and calls[-1][0] == 300_000
    lazy_calls: list[int] = []
    out = many.search().select(["id"]).to_polars(progress=lambda r, b: lazy_calls.append(r))
    assert out.height == 400_000 and lazy_calls[-1] == 400_000


def test_query_progress_bar(many: nsframe.Table, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    many.search().to_arrow(progress=True)
    err = capsys.readouterr().err
    assert f"query {many.id}" in err and "400k" in err and "MB/s" in err
    # Nobody watching, or a small answer: no bar unless asked.
    many.search().to_arrow()
    many.search().to_arrow(progress=False)
    assert "rows" not in capsys.readouterr().err
    import nsframe._upload as upload

    monkeypatch.setattr(upload, "interactive", lambda: True)
    many.search().to_arrow()  # watched, but well under a million rows
    assert "rows" not in capsys.readouterr().err
    # Watched, with the threshold lowered: the bar starts once it is passed and
    # counts every row, those before it too.
    monkeypatch.setattr(upload, "AUTO_PROGRESS_ROWS", 100_000)
    many.search().to_pandas()
    err = capsys.readouterr().err
    assert f"query {many.id}" in err and "400k" in err
    assert "0.00 rows" not in err  # its first state already counts what arrived
    many.search().limit(5).to_pandas()
    assert "rows" not in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress must be"):
        many.search().to_arrow(progress="yes")  # type: ignore[arg-type]


def test_request_bodies_encode_as_the_standard_library_would(offline: nsframe.Table) -> None:
    import json

    from nsframe._client.wire import encode_json

    bodies = [
        offline.search(np.linspace(-1, 1, 16, dtype=np.float32)).where("id > 1")
        .select({"n": "name", "y": "meta.year"}).limit(3).offset(2).request_body(),
        offline.search([[1, 0], [0.5, 1e-30]], column="emb").nprobes(4).request_body(),
        offline.search(text="naïve \"quoted\" \u2603", fts_columns=["text"]).request_body(),
        {"properties": {"k": "v"}, "mode": None, "flag": True, "ids": (1, 2**53 + 1)},
    ]
    for body in bodies:
        assert json.loads(encode_json(body)) == json.loads(json.dumps(body))
