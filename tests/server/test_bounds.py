"""Bounds: one log line per request, k and page sizes, unauthenticated bodies, index names
(issue points 6, 8 and 9)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from tests.support import ARROW_HEADERS, assert_error, ipc_stream, read_ipc_file
from tests.support.hostile import open_request, read_status

KEY = "bounds-" + "k" * 24


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    rng = np.random.default_rng(2)
    n = 300
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "text": [f"word{i % 7} other" for i in range(n)],
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, np.float32)), 4),
    })
    with serve_in_thread(tmp_path_factory.mktemp("bounds"),
                         limits={"max_k": 100, "max_page_size": 3}) as running:
        resp = requests.post(f"{running.url}/v1/table/t/create", data=ipc_stream(table),
                             headers=ARROW_HEADERS)
        assert resp.status_code == 200, resp.text
        yield running


# ----------------------------------------------------------------------- point 6
def test_a_forged_path_is_one_escaped_log_line(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Before: a %0a in the path wrote a second, made-up line into the access log."""
    caplog.set_level(logging.INFO, logger="nsframe.server.access")
    forged = ("/v1/namespace/x%0a2026-01-01%2012:00:00,000%20nsframe.server.access%20INFO"
              "%20POST%20/v1/namespace/fake/drop%20200%201.0ms%20db=-%20by=admin%0d%0a"
              "%1b[2J%e2%80%a8/create")
    with serve_in_thread(tmp_path, api_keys=[KEY]) as server:
        resp = requests.post(server.url + forged, json={})
        assert_error(resp, 401, 16)
    lines = [r.getMessage() for r in caplog.records if r.name == "nsframe.server.access"]
    assert len(lines) == 1
    line = lines[0]
    assert line.isprintable(), line
    assert "x\\n2026-01-01" in line and "\\r\\n" in line and "\\x1b[2J" in line
    assert "\\u2028" in line
    assert line.startswith("POST /v1/namespace/x\\n") and " 401 " in line


# ----------------------------------------------------------------------- point 8
@pytest.mark.parametrize(("body", "asked"), [
    ({"vector": [0, 0, 0, 1], "k": 101}, "k + offset = 101"),
    ({"vector": [0, 0, 0, 1], "k": 2**63 - 1}, "k + offset = 9223372036854775807"),
    ({"vector": [0, 0, 0, 1], "k": 60, "offset": 41}, "k + offset = 101"),
    ({"full_text_query": {"string_query": {"query": "word1"}}, "k": 1000}, "1000"),
    ({"vector": [0, 0, 0, 1], "full_text_query": {"string_query": {"query": "word1"}},
      "k": 500}, "500"),
    ({"vector": [[0, 0, 0, 1]] * 11, "k": 10}, "11 query vectors times k + offset = 10"),
])
def test_a_search_deeper_than_max_k_is_400(vectors: RunningServer, body: dict[str, object],
                                            asked: str) -> None:
    resp = requests.post(f"{vectors.url}/v1/table/t/query", json=body)
    detail = assert_error(resp, 400, 13)["detail"]
    assert asked in detail and "max_k" in detail and "100" in detail


def test_searches_within_max_k_and_scans_of_any_size_answer(vectors: RunningServer) -> None:
    url = f"{vectors.url}/v1/table/t/query"
    assert read_ipc_file(requests.post(url, json={"vector": [0, 0, 0, 1], "k": 100}).content
                         ).num_rows == 100
    assert read_ipc_file(requests.post(url, json={"vector": [[0, 0, 0, 1]] * 10, "k": 10}
                                       ).content).num_rows == 100
    # A filter-only scan streams: k is a plain limit, unbounded.
    for k in (0, 2**63 - 1):
        resp = requests.post(url, json={"filter": "id >= 0", "k": k})
        assert read_ipc_file(resp.content).num_rows == 300


def test_a_page_holds_at_most_max_page_size_names(vectors: RunningServer) -> None:
    for name in ("a", "b", "c", "d"):
        requests.post(f"{vectors.url}/v1/namespace/{name}/create", json={})
    resp = requests.get(f"{vectors.url}/v1/namespace/$/list", params={"limit": 10**15})
    page = resp.json()
    assert page["namespaces"] == ["a", "b", "c"] and page["page_token"]
    resp = requests.get(f"{vectors.url}/v1/namespace/$/list", params={"limit": 2})
    assert resp.json()["namespaces"] == ["a", "b"]


def test_an_unauthenticated_large_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Before: each 16 MiB body without a credential header was read whole before the
    401; 40 at once grew the server by 480 MiB. Now the head alone is enough."""
    with serve_in_thread(tmp_path, api_keys=[KEY]) as server:
        sock = open_request(server.url, "/v1/namespace/x/create", headers={
            "Content-Type": "application/json", "Content-Length": str(16 * 1024 * 1024 - 1)})
        with sock:
            started = time.perf_counter()
            status, _ = read_status(sock)  # no byte of the body was sent
        assert status == 401 and time.perf_counter() - started < 2
        # Chunked, without a length: read only up to the bound, then refused.
        chunks = (b"x" * 16384 for _ in range(1024))
        resp = requests.post(f"{server.url}/v1/namespace/x/create", data=chunks,
                             headers={"Content-Type": "application/json"})
        assert "65536 bytes" in assert_error(resp, 401, 16)["detail"]
        # A small body still carries its identity.
        resp = requests.post(f"{server.url}/v1/namespace/x/create",
                             json={"identity": {"api_key": KEY}})
        assert resp.status_code == 200, resp.text


# ----------------------------------------------------------------------- point 9
@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".", "a\\b", "bad\nname", "x" * 201])
def test_index_names_are_checked_like_table_names(vectors: RunningServer, name: str) -> None:
    for route, body in (("create_scalar_index", {"column": "id", "index_type": "BTREE"}),
                        ("create_index", {"column": "v", "index_type": "IVF_FLAT",
                                          "num_partitions": 2})):
        resp = requests.post(f"{vectors.url}/v1/table/t/{route}", json={**body, "name": name})
        assert "index name" in assert_error(resp, 400, 13)["detail"]
    indexes = requests.post(f"{vectors.url}/v1/table/t/index/list", json={}).json()["indexes"]
    assert all(i["index_name"] != name for i in indexes)


def test_a_good_index_name_can_be_described_and_dropped(vectors: RunningServer) -> None:
    resp = requests.post(f"{vectors.url}/v1/table/t/create_scalar_index",
                         json={"column": "id", "index_type": "BTREE", "name": "by id-1"})
    assert resp.status_code == 200, resp.text
    base = f"{vectors.url}/v1/table/t/index/by%20id-1"
    assert requests.post(f"{base}/stats", json={}).status_code == 200
    assert requests.post(f"{base}/drop", json={}).status_code == 200
