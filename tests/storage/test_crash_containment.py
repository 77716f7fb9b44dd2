"""A worker that dies in the middle of a request (a native crash, SIGSEGV) does not take
the service down: the port stays open, the next request is answered, the worker is
restarted, and one log line names the request it was running, without its secrets.

The crash is a real signal sent to the real worker process while it is inside the
request: the request's JSON body stops after its first chunk, and the server's
``100 Continue`` says that the handler has started reading it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

import nsframe

from ._rest import Api, rows
from ._servers import ServerProcess, free_port

pytestmark = pytest.mark.crash

# Sent by the clients (the server, open, ignores them): none may reach the log.
API_KEY = "crash-test-api-key-0123456789"
TOKEN = "crash-test-bearer-token-0123456789"
BODY_SECRET = "crash-test-body-secret-0123456789"
REQUEST_ID = "crash-test-request-0001"
FILTER = "id > 3 AND label <> 'crash-marker'"
READY_LINE = "Application startup complete"


def serving_pids(server: ServerProcess) -> list[int]:
    """The processes that answer requests: the server's spawned workers, else itself."""
    assert server.proc is not None
    parent = psutil.Process(server.proc.pid)
    workers = [child.pid for child in parent.children(recursive=True)
               if "spawn_main" in " ".join(child.cmdline())]
    return workers or [parent.pid]


def holding(pids: list[int], server_port: int, client_port: int) -> int:
    """Which of ``pids`` accepted the connection from ``client_port``."""
    for pid in pids:
        for conn in psutil.Process(pid).net_connections(kind="tcp"):
            if conn.laddr and conn.raddr and conn.laddr.port == server_port \
                    and conn.raddr.port == client_port:
                return pid
    raise AssertionError(f"no process of {pids} holds the connection from port {client_port}")


class StuckQuery:
    """A query whose chunked JSON body stops after its first chunk (which carries a
    secret-looking field): the worker stays inside the request until it dies."""

    def __init__(self, port: int, table: str) -> None:
        first = ('{"filter": "' + FILTER + '", "api_key": "' + BODY_SECRET + '", "k": 10')
        chunk = first.encode()
        head = (f"POST /v1/table/{table}/query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"x-api-key: {API_KEY}\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"x-request-id: {REQUEST_ID}\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                "Expect: 100-continue\r\n\r\n")
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(head.encode() + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        # uvicorn sends "100 Continue" when the application first asks for the body.
        answer = self.sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 100"), answer[:200]
        self.client_port: int = self.sock.getsockname()[1]

    def ending(self) -> bytes:
        """What the connection gives once its worker is gone: nothing (or a reset)."""
        try:
            return self.sock.recv(4096)
        except ConnectionResetError:
            return b""
        finally:
            self.sock.close()


def crash_line(server: ServerProcess, victim: int) -> str:
    """The log line that reports the crash of worker ``victim``."""
    lines = [line for line in server.log_tail(1_000_000).splitlines()
             if str(victim) in line and "SIGSEGV" in line]
    assert len(lines) == 1, server.log_tail(60)
    return lines[0]


def check_crash_line(server: ServerProcess, victim: int) -> None:
    line = crash_line(server, victim)
    assert "POST /v1/table/ns$t/query" in line
    assert REQUEST_ID in line
    assert FILTER in line  # the body's summary says which filter crashed the engine
    log = server.log_tail(1_000_000)
    assert API_KEY not in log and TOKEN not in log and BODY_SECRET not in log
    assert "<redacted>" in line


def kill_in_request(server: ServerProcess) -> int:
    """SIGSEGV the worker that is running a stuck query; its pid once it is gone."""
    assert server.port is not None
    stuck = StuckQuery(server.port, "ns%24t")
    victim = holding(serving_pids(server), server.port, stuck.client_port)
    os.kill(victim, signal.SIGSEGV)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(victim).wait(timeout=30)
    assert stuck.ending() == b""  # the request in flight on the dead worker is lost
    return victim


def test_one_worker_crashing_mid_request_is_restarted_on_the_same_port(
        tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "crash-1",
                           extra_args=[])
    server.start()
    try:
        assert server.proc is not None
        api = Api(server)
        api.session.headers["x-api-key"] = API_KEY
        assert api.create_namespace("ns").status_code == 200
        assert api.create("ns$t", rows(range(10))).status_code == 200
        port = server.port
        victim = kill_in_request(server)

        # The next request is answered, on the same port, by a new worker.
        fresh = Api(server)
        fresh.session.headers["x-api-key"] = API_KEY
        assert fresh.count("ns$t") == 10
        assert server.port == port and server.alive
        replacement = serving_pids(server)
        assert len(replacement) == 1 and victim not in replacement
        check_crash_line(server, victim)
        assert not api.server_errors and not fresh.server_errors
    finally:
        server.stop()


@dataclass
class Poller:
    """Reads the table's row count through nsframe's client, back to back, from a thread;
    notes when each answer came: before the crash, after it while the dead worker's
    replacement was still starting, or once the replacement had started serving."""

    server: ServerProcess
    ready_before: int = 0
    crashed: bool = False
    answers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with nsframe.connect(self.server.url, api_key=API_KEY) as db:
            table = db.open_table("ns$t")
            while not self.stop.is_set():
                try:
                    assert table.count_rows() == 10
                except Exception as exc:  # every failure is the finding
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.answers.append(self.phase())

    def readies(self) -> int:
        return self.server.log_tail(1_000_000).count(READY_LINE)

    def phase(self) -> str:
        if not self.crashed:
            return "before"
        return "after" if self.readies() > self.ready_before else "during"


def test_with_two_workers_the_other_keeps_answering_while_one_restarts(
        tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "crash-2",
                           extra_args=["--workers", "2"])
    server.start()
    try:
        api = Api(server)
        api.session.headers["x-api-key"] = API_KEY
        assert api.create_namespace("ns").status_code == 200
        assert api.create("ns$t", rows(range(10))).status_code == 200
        before = serving_pids(server)
        assert len(before) == 2
        poller = Poller(server)
        deadline = time.monotonic() + 90
        while poller.readies() < 2 and time.monotonic() < deadline:  # both workers serve
            time.sleep(0.05)
        poller.ready_before = poller.readies()
        assert poller.ready_before == 2
        thread = threading.Thread(target=poller.run, daemon=True)
        thread.start()
        while not poller.answers:  # the poller is under way before the crash
            time.sleep(0.01)
        victim = kill_in_request(server)
        poller.crashed = True
        while "after" not in poller.answers and time.monotonic() < deadline:
            time.sleep(0.05)
        poller.stop.set()
        thread.join(timeout=60)

        assert poller.errors == []
        # Answered while the dead worker's replacement was still starting, then after.
        assert "during" in poller.answers and "after" in poller.answers
        after = serving_pids(server)
        assert len(after) == 2 and victim not in after and set(before) - {victim} <= set(after)
        check_crash_line(server, victim)
        assert not api.server_errors
    finally:
        server.stop()


@pytest.mark.parametrize(("sig", "group"), [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGTERM-to-the-parent", "SIGINT-to-the-group"])
def test_a_stop_signal_still_ends_the_server_and_its_workers(
        tmp_path: Path, sig: signal.Signals, group: bool) -> None:
    # SIGTERM from a service manager reaches the parent; Ctrl+C in a terminal, the group.
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "stop")
    server.start()
    assert server.proc is not None
    workers = [psutil.Process(pid) for pid in serving_pids(server)]
    slot_files = [slot_file(worker) for worker in workers]
    assert all(path.is_file() for path in slot_files)
    try:
        if group:
            os.killpg(server.proc.pid, sig)
        else:
            os.kill(server.proc.pid, sig)
        assert server.proc.wait(timeout=60) == 0
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == []
        assert not any(path.exists() for path in slot_files)  # nothing left in memory
        assert "ERROR" not in server.log_tail(100)  # no worker reported as crashed
    finally:
        server.kill()


def slot_file(worker: psutil.Process) -> Path:
    """The file in which ``worker`` notes its requests in flight: mapped into its memory."""
    return next(Path(m.path) for m in worker.memory_maps()
                if Path(m.path).parent.name.startswith("nsframe-workers-"))


def test_a_killed_servers_folders_go_at_the_next_start(tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "killed")
    server.start()
    assert server.proc is not None
    worker = psutil.Process(serving_pids(server)[0])
    slots = slot_file(worker).parent
    metrics = Path(worker.environ()["PROMETHEUS_MULTIPROC_DIR"])
    assert slots.name.startswith(f"nsframe-workers-{server.proc.pid}-")
    assert metrics.name.startswith(f"nsframe-metrics-{server.proc.pid}-")
    server.kill()
    assert slots.is_dir() and metrics.is_dir()  # SIGKILL: nothing cleaned up
    server.start()
    try:
        assert not slots.exists() and not metrics.exists()
    finally:
        server.stop()


def test_workers_that_keep_dying_while_starting_stop_the_server(tmp_path: Path) -> None:
    # Every worker is killed as soon as it appears, before it can serve: a start-up
    # crash. The supervisor must not restart them forever without a word.
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "startup")
    port = free_port()
    server._spawn(port)
    assert server.proc is not None
    parent = psutil.Process(server.proc.pid)
    killed: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while server.proc.poll() is None and time.monotonic() < deadline:
            for child in parent.children():
                with contextlib.suppress(psutil.NoSuchProcess):
                    if child.pid not in killed and "spawn_main" in " ".join(child.cmdline()):
                        child.kill()
                        killed.add(child.pid)
            time.sleep(0.02)
        assert server.proc.wait(timeout=30) == 1
        log = server.log_tail(200)
        assert len(killed) == 3
        assert log.count("while starting (") == 3
        assert "workers keep dying while starting: stopping the server" in log
    finally:
        server.kill()
