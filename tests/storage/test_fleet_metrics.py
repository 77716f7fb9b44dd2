"""Metrics of a fleet: three replicas on moto's S3 behind a round-robin balancer, and one
server with two workers. What each replica's ``/metrics`` counts adds up to exactly what
was sent (docs/operations.md, Metrics)."""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pytest
import requests
from prometheus_client.mmap_dict import MmapedDict

from nsframe.server._limits import Limits
from tests.support import ipc_stream
from tests.support.metrics import added, by, label_values, scrape, total
from tests.support.s3 import S3Endpoint

from ._fleet import fleet
from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess

REQUESTS = "nsframe_http_requests_total"
LATENCY = "nsframe_http_request_duration_seconds_count"
ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def test_the_replicas_metrics_add_up_to_what_the_balancer_sent(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
        code_under_test: Path) -> None:
    with fleet(s3, tmp_path_factory.mktemp("fleet-metrics-logs")) as replicas:
        servers = replicas.servers
        # The servers' own start-up probes went to each directly: compare with a first scrape.
        before = [scrape(s.url) for s in servers]
        sent_before = Counter(replicas.balancer.sent)
        session = requests.Session()
        expected: Counter[tuple[str, str]] = Counter()

        def send(route: str, status: int, method: str, path: str, **kwargs: Any) -> None:
            resp = session.request(method, replicas.url + path, timeout=60, **kwargs)
            assert resp.status_code == status, (path, resp.text)
            expected[(route, str(status))] += 1

        send("CreateNamespace", 200, "POST", "/v1/namespace/fm/create", json={})
        send("CreateTable", 200, "POST", "/v1/table/fm$secret_sales/create", headers=ARROW,
             data=ipc_stream({"id": [1, 2, 3]}))
        for _ in range(7):
            send("CountRows", 200, "POST", "/v1/table/fm$secret_sales/count_rows", json={})
        for _ in range(4):
            send("DescribeTable", 200, "POST", "/v1/table/fm$secret_sales/describe", json={})
        for _ in range(5):
            send("DescribeTable", 404, "POST", "/v1/table/fm$missing_one/describe", json={})
        for _ in range(3):
            send("CountRows", 400, "POST", "/v1/table/fm$secret_sales/count_rows",
                 json={"predicate": "no_such_column > 1"})
        for _ in range(2):
            send("unmatched", 404, "GET", "/v1/no/such/operation")
        after = [scrape(s.url) for s in servers]

    grown = added([by(a, REQUESTS, "route", "status") for a in after],
                  [by(b, REQUESTS, "route", "status") for b in before])
    assert grown == expected
    # Each replica counted what the balancer forwarded to it, and all three got some.
    sent = Counter(replicas.balancer.sent)
    sent.subtract(sent_before)
    for server, a, b in zip(servers, after, before, strict=True):
        backend = server.url.removeprefix("http://")
        assert total(a, REQUESTS) - total(b, REQUESTS) == sent[backend] > 0, backend
    # One latency observation per request, by route.
    by_route: Counter[tuple[str, ...]] = Counter()
    for (route, _), count in expected.items():
        by_route[(route,)] += count
    assert added([by(a, LATENCY, "route") for a in after],
                 [by(b, LATENCY, "route") for b in before]) == by_route
    for a in after:
        assert total(a, "nsframe_http_requests_in_flight") == 0
        assert total(a, "nsframe_lane_slots_in_use") == 0
        # Every replica read the catalog on S3 itself.
        assert total(a, "nsframe_store_requests_total", store="s3", kind="list") > 0
        assert total(a, "nsframe_store_requests_total", store="s3", kind="get") > 0
        # No table name (nor a raw path) in any label unless the operator asks for it.
        assert not {v for v in label_values(a)
                     if "secret_sales" in v or "missing_one" in v or "/" in v}
    assert sum(total(a, "nsframe_store_requests_total", store="s3", kind="create")
               for a in after) > 0  # the namespace's and the table's catalog entries


def _counted_requests(folder: Path, pid: int) -> float:
    """The requests one worker counted, from its own file of the metrics folder."""
    path = folder / f"counter_{pid}.db"
    if not path.exists():
        return 0.0
    return sum(value for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path))
               if json.loads(key)[1] == REQUESTS)


def test_two_workers_count_into_one_answer(tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "workers",
                           extra_args=["--workers", "2"])
    server.start()
    try:
        assert server.proc is not None
        workers = [w for w in psutil.Process(server.proc.pid).children(recursive=True)
                   if "spawn_main" in " ".join(w.cmdline())]
        assert len(workers) == 2
        folder = Path(workers[0].environ()["PROMETHEUS_MULTIPROC_DIR"])
        assert folder.is_dir() and folder.name.startswith(f"nsframe-metrics-{server.proc.pid}-")
        before = scrape(server.url)
        sent = 0
        # A connection each: the kernel hands them to either worker. Until both counted some.
        while sent < 20 or (sent < 400 and
                            not all(_counted_requests(folder, w.pid) for w in workers)):
            resp = requests.post(f"{server.url}/v1/namespace/%24/exists", json={},
                                 headers={"Connection": "close"}, timeout=30)
            assert resp.status_code == 200
            sent += 1
        assert all(_counted_requests(folder, w.pid) for w in workers)
        # Whichever worker answers a scrape, it shows the sum of both.
        for _ in range(4):
            after = scrape(server.url)
            assert added([by(after, REQUESTS, "route", "status")],
                         [by(before, REQUESTS, "route", "status")]) == {
                ("NamespaceExists", "200"): sent}
            # Each worker's slots: the server's.
            assert total(after, "nsframe_lane_slots", lane="light") == 2 * Limits().light_slots
            assert total(after, "nsframe_http_requests_in_flight") == 0
    finally:
        server.stop()
    assert not folder.exists()  # removed with the server


@pytest.mark.crash
def test_a_crashed_workers_requests_stay_counted_and_leave_no_one_in_flight(
        tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "crashing")
    server.start()
    try:
        assert server.proc is not None and server.port is not None
        made = [requests.post(f"{server.url}/v1/namespace/c/create", json={}, timeout=30),
                requests.post(f"{server.url}/v1/table/c$t/create", headers=ARROW,
                              data=ipc_stream({"id": [1]}), timeout=30)]
        assert [m.status_code for m in made] == [200, 200]
        # An insert whose body stops after its schema: in flight until its worker dies.
        schema = pa.schema([("id", pa.int64())]).serialize().to_pybytes()
        stalled = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        stalled.sendall(b"POST /v1/table/c%24t/insert HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Type: application/vnd.apache.arrow.stream\r\n"
                        b"Content-Length: 1000000\r\n\r\n" + schema)
        deadline = time.monotonic() + 30
        while total(scrape(server.url), "nsframe_http_requests_in_flight") != 1:
            assert time.monotonic() < deadline, "the stalled insert never showed in flight"
            time.sleep(0.05)
        before = scrape(server.url)
        assert total(before, "nsframe_lane_slots_in_use", lane="upload") == 1
        worker = next(w for w in psutil.Process(server.proc.pid).children(recursive=True)
                      if "spawn_main" in " ".join(w.cmdline()))
        worker.kill()
        worker.wait(30)
        stalled.close()
        deadline = time.monotonic() + 60
        while True:  # until the supervisor's new worker answers
            try:
                after = scrape(server.url)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, server.log_tail()
                time.sleep(0.1)
        assert total(after, "nsframe_http_requests_in_flight") == 0
        assert total(after, "nsframe_lane_slots_in_use") == 0
        assert total(after, "nsframe_lane_slots", lane="upload") == Limits().upload_slots
        # What the dead worker counted is still in the sums.
        assert by(after, REQUESTS, "route", "status")[("CreateTable", "200")] == \
            by(before, REQUESTS, "route", "status")[("CreateTable", "200")] == 1
    finally:
        server.stop()
