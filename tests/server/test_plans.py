"""explain_plan and analyze_plan (a JSON string each), and the columns a query may name
that are not in the table: `_distance`, `_score`, `_rowid`."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, read_ipc_file


@pytest.fixture
def table(http: requests.Session, base_url: str, ns: str) -> str:
    ident = f"{ns}$docs"
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "text": ["red apple", "green pear", "red sky"],
        "emb": pa.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]], pa.list_(pa.float32(), 2)),
    })
    assert http.post(f"{base_url}/v1/table/{ident}/create", data=ipc_stream(data),
                     headers=ARROW_HEADERS).ok
    return ident


def query(http: requests.Session, base_url: str, ident: str, body: dict[str, Any],
          ) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{ident}/query", json=body)


@pytest.mark.parametrize(("body", "columns"), [
    ({"vector": {"single_vector": [1.0, 0.0]}, "k": 2,
      "columns": {"column_names": ["id", "_distance"]}}, ["id", "_distance"]),
    ({"full_text_query": {"string_query": {"query": "red"}}, "k": 5,
      "columns": {"column_names": ["_score", "id"]}}, ["_score", "id"]),
    ({"filter": "id > 1", "columns": {"column_names": ["id", "_rowid"]}}, ["id", "_rowid"]),
    ({"vector": [1.0, 0.0], "k": 1, "columns": ["_rowid", "id", "_distance"]},
     ["_rowid", "id", "_distance"]),
], ids=["distance", "score", "rowid", "lancedb-list"])
def test_search_columns_may_be_named(http: requests.Session, base_url: str, table: str,
                                     body: dict[str, Any], columns: list[str]) -> None:
    resp = query(http, base_url, table, body)
    assert resp.status_code == 200, resp.text
    assert read_ipc_file(resp.content).column_names == columns


def test_an_unknown_column_is_still_a_404(http: requests.Session, base_url: str,
                                          table: str) -> None:
    resp = query(http, base_url, table, {"filter": "id > 1",
                                         "columns": {"column_names": ["_nope"]}})
    assert_error(resp, 404, 12)


def test_explain_and_analyze_plans(http: requests.Session, base_url: str, table: str,
                                   root: Any) -> None:
    search = {"vector": {"single_vector": [1.0, 0.0]}, "k": 2, "filter": "id > 1"}
    resp = http.post(f"{base_url}/v1/table/{table}/explain_plan",
                     json={"query": search, "verbose": True})
    assert resp.status_code == 200, resp.text
    plan = resp.json()
    assert isinstance(plan, str) and "KNN" in plan and "_distance" in plan
    # The plan names the table, never a storage path.
    assert str(root).lstrip("/") not in plan and table in plan
    resp = http.post(f"{base_url}/v1/table/{table}/analyze_plan", json=search)
    assert resp.status_code == 200, resp.text
    assert "output_rows" in resp.json()
    text = {"full_text_query": {"string_query": {"query": "red"}}, "branch": "main"}
    resp = http.post(f"{base_url}/v1/table/{table}/explain_plan", json={"query": text})
    assert resp.status_code == 200 and "_score" in resp.json()


def test_plan_refusals(http: requests.Session, base_url: str, table: str) -> None:
    url = f"{base_url}/v1/table/{table}/explain_plan"
    assert_error(http.post(url, json={}), 400, 13)
    hybrid = {"vector": [1.0, 0.0], "full_text_query": {"string_query": {"query": "red"}}}
    assert_error(http.post(url, json={"query": hybrid}), 400, 13)
    assert_error(http.post(url, json={"query": {"filter": "nope > 1"}}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{table}_x/analyze_plan", json={}), 404, 4)
