"""A replica of a fleet stopped with SIGTERM (three replicas on moto's S3 behind a
round-robin balancer that health-checks ``/readyz``): readiness turns 503 first, the
balancer stops sending it requests, the writes it was receiving finish and are there,
and it exits by its deadline; a write longer than the deadline is never acknowledged
and lost."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from tests.support.s3 import S3Endpoint

from ._fleet import Fleet, fleet
from ._rest import ARROW_STREAM, quoted, rows
from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess

DRAIN_DELAY = 3.0
GRACEFUL = 60.0
# What the supervisor allows past the drain delay and graceful timeout (_workers.STOP_MARGIN),
# plus the parent's half-second signal loop and a loaded machine.
MARGIN = 5.0 + 5.0
TABLE = "drain$t"


def _slow_body(ids: range, pieces: int, pause: float, sent: threading.Event) -> Iterator[bytes]:
    """An Arrow stream of rows ``ids``, sent in ``pieces`` with ``pause`` seconds between
    them: an upload still arriving while the server is told to stop."""
    data = rows(ids)
    size = -(-len(data) // pieces)
    for start in range(0, len(data), size):
        yield data[start:start + size]
        sent.set()
        time.sleep(pause)


class Writer(threading.Thread):
    """One slow insert straight to a replica; its answer, or the error it ended with."""

    def __init__(self, url: str, ids: range, pieces: int, pause: float) -> None:
        super().__init__(daemon=True)
        self.url, self.ids, self.pieces, self.pause = url, ids, pieces, pause
        self.started_sending = threading.Event()
        self.status: int | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            resp = requests.post(
                f"{self.url}/v1/table/{quoted(TABLE)}/insert", params={"mode": "append"},
                data=_slow_body(self.ids, self.pieces, self.pause, self.started_sending),
                headers={"Content-Type": ARROW_STREAM}, timeout=120)
            self.status = resp.status_code
        except requests.RequestException as exc:
            self.error = exc


def _ids(url: str) -> list[int]:
    resp = requests.post(f"{url}/v1/table/{quoted(TABLE)}/query",
                         json={"filter": "true", "columns": {"column_names": ["id"]}},
                         timeout=60)
    assert resp.status_code == 200, resp.text
    table = pa.ipc.open_file(pa.BufferReader(resp.content)).read_all()
    return sorted(int(i) for i in table.column("id").to_pylist())


def _make_table(replicas: Fleet) -> None:
    made = requests.post(f"{replicas.url}/v1/namespace/drain/create", json={}, timeout=60)
    assert made.status_code == 200, made.text
    resp = requests.post(f"{replicas.url}/v1/table/{quoted(TABLE)}/create", data=rows(range(3)),
                         headers={"Content-Type": ARROW_STREAM}, timeout=60)
    assert resp.status_code == 200, resp.text


def test_a_replica_told_to_stop_drains_before_it_exits(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory, code_under_test: Path) -> None:
    args = ["--drain-delay", str(DRAIN_DELAY), "--graceful-timeout", str(GRACEFUL)]
    with fleet(s3, tmp_path_factory.mktemp("drain-logs"), name="drain", extra_args=args,
               ready_path="/readyz") as replicas:
        _make_table(replicas)
        target = replicas.servers[0]
        backend = target.url.removeprefix("http://")
        assert target.proc is not None
        # Three uploads of ~8 s each, still arriving when the drain delay ends.
        writers = [Writer(target.url, range(1000 * (n + 1), 1000 * (n + 1) + 500), 16, 0.5)
                   for n in range(3)]
        for writer in writers:
            writer.start()
        for writer in writers:
            assert writer.started_sending.wait(30)
        stopped = time.monotonic()
        os.kill(target.proc.pid, signal.SIGTERM)  # the supervisor only, as an orchestrator does

        # Readiness turns 503 while the replica still answers.
        seen = []
        while time.monotonic() - stopped < DRAIN_DELAY + 5:
            try:
                resp = requests.get(target.url + "/readyz", timeout=5)
            except requests.ConnectionError:
                break
            seen.append((resp.status_code, resp.json()))
            if resp.status_code == 503:
                break
            time.sleep(0.05)
        assert seen and seen[-1] == (503, {"status": "draining"}), seen
        live = requests.get(target.url + "/healthz", timeout=5)
        assert live.status_code == 200 and live.json() == {"status": "ok"}

        # The balancer takes it out, and sends it nothing more.
        while backend in replicas.balancer.ready():
            assert time.monotonic() - stopped < DRAIN_DELAY + 5, "the balancer never noticed"
            time.sleep(0.05)
        before = replicas.balancer.sent[backend]
        for _ in range(6):
            resp = requests.post(f"{replicas.url}/v1/table/{quoted(TABLE)}/count_rows",
                                 json={}, timeout=60)
            assert resp.status_code == 200, resp.text
        assert replicas.balancer.sent[backend] == before

        # The uploads in flight finish, acknowledged, and the replica exits in time.
        for writer in writers:
            writer.join(GRACEFUL)
            assert (writer.status, writer.error) == (200, None)
        target.proc.wait(timeout=DRAIN_DELAY + GRACEFUL + MARGIN)
        assert time.monotonic() - stopped < DRAIN_DELAY + GRACEFUL + MARGIN
        assert target.proc.returncode == 0, target.log_tail()
        expected = [*range(3), *(i for w in writers for i in w.ids)]
        assert _ids(replicas.url) == expected
        assert "did not stop within" not in target.log_tail(400)


def test_a_write_longer_than_the_deadline_is_never_acknowledged_and_lost(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory, code_under_test: Path) -> None:
    graceful = 1.0
    args = ["--graceful-timeout", str(graceful)]
    with fleet(s3, tmp_path_factory.mktemp("deadline-logs"), name="deadline",
               extra_args=args, ready_path="/readyz") as replicas:
        _make_table(replicas)
        target = replicas.servers[0]
        assert target.proc is not None
        # ~30 s of upload against a deadline of 1 s (+ the supervisor's margin).
        writer = Writer(target.url, range(1000, 1500), 60, 0.5)
        writer.start()
        assert writer.started_sending.wait(30)
        time.sleep(1.0)
        stopped = time.monotonic()
        # The whole process group, as systemd stops a service: each worker gets the
        # signal twice (directly, and forwarded by the supervisor).
        os.killpg(target.proc.pid, signal.SIGTERM)
        target.proc.wait(timeout=graceful + MARGIN)
        assert time.monotonic() - stopped < graceful + MARGIN
        writer.join(60)
        assert not writer.is_alive()
        ids = _ids(replicas.url)
        if writer.status == 200:
            assert ids == [*range(3), *writer.ids]  # acknowledged: it is there
        else:
            assert writer.error is not None or writer.status != 200
            assert ids in ([*range(3)], [*range(3), *writer.ids])  # all or nothing
        # The deadline passed with the write running (uvicorn's line), and the worker
        # kept its record for the write's sake (a dead server's write is collected).
        log = target.log_tail(400)
        assert "graceful shutdown exceeded" in log
        assert "write(s) still running" in log


def test_every_worker_drains_when_the_supervisor_is_told_to_stop(
        tmp_path: Path, code_under_test: Path) -> None:
    """With --workers 2, the supervisor forwards the stop: whichever worker answers,
    readiness is 503 during the drain delay, and the whole server exits in time."""
    delay = 3.0
    server = ServerProcess(str(tmp_path / "root"), tmp_path / "logs", "workers",
                           extra_args=["--workers", "2", "--drain-delay", str(delay),
                                       "--graceful-timeout", "5"])
    try:
        server.start()
        assert server.proc is not None
        stopped = time.monotonic()
        os.kill(server.proc.pid, signal.SIGTERM)
        answers = []
        while time.monotonic() - stopped < delay - 1:
            # A new connection each time: either worker may accept it.
            resp = requests.get(server.url + "/readyz", timeout=5,
                                headers={"Connection": "close"})
            answers.append((resp.status_code, resp.json()))
            time.sleep(0.1)
        # The first answers may come before the supervisor forwarded the signal.
        late = answers[len(answers) // 2:]
        assert late and all(a == (503, {"status": "draining"}) for a in late), answers
        server.proc.wait(timeout=delay + 5 + MARGIN)
        assert server.proc.returncode == 0, server.log_tail()
        with pytest.raises(requests.ConnectionError):
            requests.get(server.url + "/healthz", timeout=5)
    finally:
        server.kill()
