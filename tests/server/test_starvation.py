"""Hostile clients never wedge the server (issue points 1 and 2).

Measured against the server before this work: 40 abandoned `NOT (` predicates, or 40
uploads that stop after their schema, left describe and list without an answer for
20-50 s. Here 100 stalled uploads and 50 pathological predicates are in flight at once,
and describe, list and a query each answer within 2 s. Every wait is bounded.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from nsframe._protocol.sql import measure
from nsframe.server import RunningServer, serve_in_thread
from nsframe.server._routes import tables as table_routes
from tests.storage._servers import ServerProcess, cluster
from tests.support import ARROW_HEADERS, assert_error, ipc_stream, read_ipc_file
from tests.support.hostile import (
    open_request,
    read_status,
    schema_message,
    stalled_uploads,
    timed,
)

SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])
# 38 levels: before the limits, no answer within 30 s, and the work went on regardless.
EXPLODING = "NOT (" * 38 + "id = -1" + ")" * 38


def rows(n: int, start: int = 0) -> bytes:
    return ipc_stream({"id": list(range(start, start + n)),
                       "text": [f"row {i}" for i in range(start, start + n)]}, schema=SCHEMA)


def make_table(url: str, ident: str, n: int = 100) -> None:
    ns = ident.rsplit("$", 1)[0]
    requests.post(f"{url}/v1/namespace/{ns}/create", json={"mode": "exist_ok"}, timeout=10)
    resp = requests.post(f"{url}/v1/table/{ident}/create", data=rows(n), headers=ARROW_HEADERS,
                         timeout=30)
    assert resp.status_code == 200, resp.text


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path) as running:
        make_table(running.url, "ns$t")
        yield running


# ------------------------------------------------------------------ point 1
@pytest.mark.parametrize(("path", "body"), [
    ("count_rows", {"predicate": EXPLODING}),
    ("query", {"filter": EXPLODING, "k": 5}),
    ("delete", {"predicate": EXPLODING}),
    ("query", {"columns": {"x": EXPLODING}, "k": 5}),
])
def test_deep_predicate_is_refused_before_lance_parses_it(fresh: RunningServer, path: str,
                                                          body: dict[str, object]) -> None:
    resp, seconds = timed(lambda: requests.post(f"{fresh.url}/v1/table/ns$t/{path}",
                                                json=body, timeout=30))
    detail = assert_error(resp, 400, 13)["detail"]
    assert "max_predicate_depth" in detail and "32" in detail
    assert seconds < 1.0


def test_huge_filter_is_refused_by_its_length(fresh: RunningServer) -> None:
    """The issue's 15 MiB `id = 1 OR ...` filter ran past 60 s."""
    terms = 15 * 1024 * 1024 // len("id = 1000000 OR ")
    predicate = " OR ".join(f"id = {1_000_000 + i}" for i in range(terms))
    resp, seconds = timed(lambda: requests.post(f"{fresh.url}/v1/table/ns$t/count_rows",
                                                json={"predicate": predicate}, timeout=60))
    detail = assert_error(resp, 400, 13)["detail"]
    assert "max_predicate_bytes" in detail and str(256 * 1024) in detail
    assert len(detail) < 1000  # the predicate itself is not echoed back
    assert seconds < 10.0


def test_predicate_limits_are_configurable(tmp_path: Path) -> None:
    limits = {"max_predicate_depth": 3, "max_predicate_bytes": 100}
    with serve_in_thread(tmp_path, limits=limits) as server:
        make_table(server.url, "ns$t")
        url = f"{server.url}/v1/table/ns$t/count_rows"
        assert requests.post(url, json={"predicate": "NOT (id = 1)"}).json() == 99
        detail = assert_error(requests.post(url, json={"predicate": "NOT (NOT (id = 1))"}),
                              400, 13)["detail"]
        assert "4 levels" in detail and "at most 3" in detail
        assert "at most 100 bytes" in assert_error(
            requests.post(url, json={"predicate": "id IN (" + "1," * 60 + "1)"}), 400)["detail"]


@pytest.mark.parametrize(("sql", "depth"), [
    ("id = 1", 0),
    ("NOT (NOT (id = 1))", 4),
    ("NOT a AND NOT b AND NOT c OR NOT d", 1),
    ("((a))", 2),
    ("'((((' = s AND \"(\" = `(((`", 0),
    ("a = 1 -- ((((\n AND b = 2", 0),
    ("a /* NOT ( NOT ( */ = 1", 0),
    ("NOT NOT NOT x", 3),
    ("(a OR NOT (b AND NOT c))", 4),
    ("'it''s (' = s", 0),
])
def test_nesting_is_measured_outside_quotes_and_comments(sql: str, depth: int) -> None:
    assert measure(sql).depth == depth
    assert not measure(sql).unopened
    assert measure("a) OR (b").unopened


def test_query_deadline_stops_the_work_with_a_400_naming_the_limit(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, limits={"query_timeout": 1e-6}) as server:
        make_table(server.url, "ns$t", 5000)
        for path, body in (("query", {"filter": "id >= 0"}),
                           ("count_rows", {"predicate": "id >= 0"}),
                           ("query", {"vector": None, "k": 0})):
            detail = assert_error(requests.post(f"{server.url}/v1/table/ns$t/{path}",
                                                json=body), 400, 13)["detail"]
            assert "query_timeout" in detail and "1e-06 s" in detail


def test_count_rows_checks_its_deadline_between_fragments(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """One Lance call cannot be interrupted: a count runs a group of fragments per call."""
    monkeypatch.setattr(table_routes, "COUNT_GROUP_ROWS", 1)
    calls: list[float] = []
    real = table_routes.Work.check

    def check(self: table_routes.Work) -> None:
        calls.append(time.monotonic())
        real(self)

    monkeypatch.setattr(table_routes.Work, "check", check)
    with serve_in_thread(tmp_path) as server:
        make_table(server.url, "ns$t", 10)
        for start in range(10, 50, 10):
            resp = requests.post(f"{server.url}/v1/table/ns$t/insert", data=rows(10, start),
                                 headers=ARROW_HEADERS)
            assert resp.status_code == 200, resp.text
        resp = requests.post(f"{server.url}/v1/table/ns$t/count_rows",
                             json={"predicate": "id % 2 = 0"})
        assert resp.json() == 25
        assert len(calls) == 5  # one check before each of the 5 fragments


def test_a_client_that_hangs_up_frees_its_slot(tmp_path: Path) -> None:
    """A streamed result stops when its client goes; the heavy lane's only slot is free
    again at once, where the scan would otherwise have run to its end."""
    with serve_in_thread(tmp_path, limits={"heavy_slots": 1, "queue_timeout": 5}) as server:
        make_table(server.url, "ns$t", 10)
        big = pa.table({"id": pa.array(range(100, 2_000_100), pa.int64()),
                        "text": pa.array(["x" * 20] * 2_000_000)})
        resp = requests.post(f"{server.url}/v1/table/ns$t/insert", data=ipc_stream(big),
                             headers=ARROW_HEADERS, timeout=60)
        assert resp.status_code == 200, resp.text
        with requests.post(f"{server.url}/v1/table/ns$t/query", json={"k": 0}, stream=True,
                           timeout=30) as streamed:
            assert streamed.status_code == 200
            assert "content-length" not in streamed.headers  # it streams
            next(streamed.iter_content(65536))
        # Closed after one chunk of ~50 MB: the slot must come back, not after the scan.
        resp, seconds = timed(lambda: requests.post(
            f"{server.url}/v1/table/ns$t/query", json={"filter": "id < 3"}, timeout=30))
        assert resp.status_code == 200, resp.text
        assert read_ipc_file(resp.content).num_rows == 3
        assert seconds < 4.0


# ------------------------------------------------------------------ point 2
def fire_predicates(url: str, count: int, stop: threading.Event,
                    statuses: list[int]) -> list[threading.Thread]:
    def one() -> None:
        with requests.Session() as http:
            while not stop.is_set():
                resp = http.post(f"{url}/v1/table/ns$t/count_rows",
                                 json={"predicate": EXPLODING}, timeout=30)
                statuses.append(resp.status_code)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real `nsframe serve`: the attackers' 50 threads are other clients, not threads
    of the server's own process contending for its interpreter lock (in one process
    the describe measured the lock's hand-offs: 2.48 s once in four full runs)."""
    with cluster(str(tmp_path / "root"), 1, tmp_path) as (server,):
        make_table(server.url, "ns$t")
        yield server


def test_describe_list_and_query_answer_while_uploads_stall_and_predicates_explode(
    served: ServerProcess,
) -> None:
    """The issue's "done when": describe within 2 s while 50 stalled uploads and 50
    pathological predicates are in flight; here 100 stalled uploads, and list and a
    query must answer too."""
    url = served.url
    stop = threading.Event()
    statuses: list[int] = []
    with stalled_uploads(url, "/v1/table/ns$t/insert", SCHEMA, 100):
        threads = fire_predicates(url, 50, stop, statuses)
        try:
            time.sleep(1.0)  # every upload has reached the server and stalled
            timings = {}
            for name, call in {
                "describe": lambda: requests.post(f"{url}/v1/table/ns$t/describe", json={},
                                                  timeout=10),
                "list": lambda: requests.get(f"{url}/v1/namespace/ns/table/list", timeout=10),
                "namespaces": lambda: requests.get(f"{url}/v1/namespace/$/list", timeout=10),
                "query": lambda: requests.post(f"{url}/v1/table/ns$t/query",
                                               json={"filter": "id < 5"}, timeout=10),
            }.items():
                resp, timings[name] = timed(call)
                assert resp.status_code == 200, (name, resp.text)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
    print("answer times while 100 uploads stall and 50 predicates explode:",
          {k: round(v, 3) for k, v in timings.items()})
    assert max(timings.values()) < 2.0, timings
    assert statuses and set(statuses) == {400}


def test_a_stalled_upload_times_out_and_frees_its_slot(tmp_path: Path) -> None:
    limits = {"body_idle_timeout": 0.5, "upload_slots": 1, "queue_timeout": 5}
    with serve_in_thread(tmp_path, limits=limits) as server:
        make_table(server.url, "ns$t", 3)
        with stalled_uploads(server.url, "/v1/table/ns$t/insert", SCHEMA, 1) as (sock,):
            (status, head), seconds = timed(lambda: read_status(sock))
        assert status == 408 and seconds < 3.0
        assert b"body_idle_timeout" in head or b"body_idle_timeout" in sock.recv(65536)
        resp = requests.post(f"{server.url}/v1/table/ns$t/insert", data=rows(2, 10),
                             headers=ARROW_HEADERS, timeout=10)
        assert resp.status_code == 200, resp.text
        assert requests.post(f"{server.url}/v1/table/ns$t/count_rows", json={}).json() == 5


def test_a_slow_upload_meets_the_total_deadline(tmp_path: Path) -> None:
    limits = {"body_idle_timeout": 5, "body_timeout": 1.0}
    with serve_in_thread(tmp_path, limits=limits) as server:
        make_table(server.url, "ns$t", 3)
        with stalled_uploads(server.url, "/v1/table/ns$t/insert", SCHEMA, 1) as (sock,):
            started = time.monotonic()
            # The rows a byte every 0.2 s: never idle, but never done either.
            trickle = iter(rows(50)[len(schema_message(SCHEMA)):])
            while not select.select([sock], [], [], 0.2)[0]:
                assert time.monotonic() - started < 10, "no answer"
                sock.sendall(bytes([next(trickle)]))
            status, _ = read_status(sock)
        assert status == 408 and 0.9 < time.monotonic() - started < 5
        assert requests.post(f"{server.url}/v1/table/ns$t/count_rows", json={}).json() == 3


def test_a_stalled_json_body_times_out(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, limits={"body_idle_timeout": 0.5}) as server:
        sock = open_request(server.url, "/v1/namespace/x/create", body=b'{"mode": ',
                            headers={"Content-Type": "application/json",
                                     "Content-Length": "100"})
        with sock:
            (status, _), seconds = timed(lambda: read_status(sock))
        assert status == 408 and seconds < 3.0
        assert requests.post(f"{server.url}/v1/namespace/x/exists", json={}).status_code == 404


def test_a_full_lane_answers_503_with_retry_after(tmp_path: Path) -> None:
    limits = {"upload_slots": 1, "queue_timeout": 0.5}
    with serve_in_thread(tmp_path, limits=limits) as server:
        make_table(server.url, "ns$t", 3)
        with stalled_uploads(server.url, "/v1/table/ns$t/insert", SCHEMA, 1):
            time.sleep(0.3)
            resp, seconds = timed(lambda: requests.post(
                f"{server.url}/v1/table/ns$t/insert", data=rows(1, 50), headers=ARROW_HEADERS,
                timeout=10))
            body = assert_error(resp, 503, 17)
            assert "upload_slots" in body["detail"] and resp.headers["Retry-After"] == "1"
            assert seconds < 3.0
            # Other lanes are untouched.
            assert requests.post(f"{server.url}/v1/table/ns$t/count_rows",
                                 json={}).json() == 3
