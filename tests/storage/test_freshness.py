"""Read freshness across servers on one root: strong by default; with
``read_consistency_interval`` a read may lag other servers' commits by up to the interval,
while writes always act on the latest state (docs/replicas.md)."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from nsframe.server import RunningServer, serve_in_thread
from tests.support import ARROW_HEADERS, ipc_stream


def count(server: RunningServer, table: str) -> int:
    resp = requests.post(f"{server.url}/v1/table/{table}/count_rows", json={}, timeout=30)
    assert resp.status_code == 200, resp.text
    value: int = resp.json()
    return value


def exists(server: RunningServer, table: str) -> int:
    return requests.post(f"{server.url}/v1/table/{table}/exists", json={}, timeout=30).status_code


def write(server: RunningServer, table: str, action: str, ids: list[int]) -> int:
    """Create or insert rows ``ids``; the version the answer names."""
    params = {"mode": "append"} if action == "insert" else None
    resp = requests.post(f"{server.url}/v1/table/{table}/{action}", params=params,
                         data=ipc_stream({"id": ids}), headers=ARROW_HEADERS, timeout=30)
    assert resp.status_code == 200, resp.text
    version: int = resp.json()["version"]
    return version


def test_reads_are_strong_by_default(tmp_path: Path) -> None:
    """Each read sees every commit another server acknowledged before it started."""
    with serve_in_thread(tmp_path) as a, serve_in_thread(tmp_path) as b:
        assert requests.post(f"{a.url}/v1/namespace/n/create", json={}).ok
        write(a, "n$t", "create", [0])
        for i in range(1, 6):
            write(a, "n$t", "insert", [i])
            assert count(b, "n$t") == i + 1
        assert exists(b, "n$u") == 404
        write(a, "n$u", "create", [0])
        assert exists(b, "n$u") == 200
        assert requests.post(f"{a.url}/v1/table/n$u/drop", json={}).ok
        assert exists(b, "n$u") == 404


def test_interval_lets_reads_lag_but_never_writes(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path) as a, \
            serve_in_thread(tmp_path, read_consistency_interval=60) as b:
        assert requests.post(f"{a.url}/v1/namespace/n/create", json={}).ok
        write(a, "n$t", "create", [1, 2, 3])
        assert count(b, "n$t") == 3  # b resolves the table now
        assert exists(b, "n$u") == 404  # ... and the absence of this one
        latest = write(a, "n$t", "insert", [4, 5])
        write(a, "n$u", "create", [1])
        # Within the interval b may answer from what it resolved: the trade it was set for.
        assert count(b, "n$t") == 3
        assert exists(b, "n$u") == 404
        # A write never uses what b remembers: it commits after a's version, and reaches
        # the table b still took for absent.
        assert write(b, "n$t", "insert", [6]) == latest + 1
        assert write(b, "n$u", "insert", [2]) == 2
        # b reads its own writes at once, and with them everything they committed after.
        assert count(b, "n$t") == 6
        assert count(b, "n$u") == 2
        assert count(a, "n$t") == 6


def test_interval_expires(tmp_path: Path) -> None:
    interval = 0.5
    with serve_in_thread(tmp_path) as a, \
            serve_in_thread(tmp_path, read_consistency_interval=interval) as b:
        assert requests.post(f"{a.url}/v1/namespace/n/create", json={}).ok
        write(a, "n$t", "create", [1])
        assert count(b, "n$t") == 1
        written = time.monotonic()
        write(a, "n$t", "insert", [2])
        time.sleep(max(0.0, interval - (time.monotonic() - written)) + 0.1)
        assert count(b, "n$t") == 2
