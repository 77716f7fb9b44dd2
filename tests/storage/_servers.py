"""Real ``nsframe serve`` processes sharing one storage root, started, killed and restarted.

Each server runs in a session (process group) of its own, so a SIGKILL reaches uvicorn
and anything it started, and every process is killed when its owner exits, whatever
the outcome of the test. A server counts as started only once *it* logged that it
bound its port and it answers HTTP there: a port taken by another program in the
meantime is not mistaken for our server.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import pyarrow as pa
import requests

from tests.support import ARROW_HEADERS, ipc_stream

# The worktree whose nsframe the servers run (tests/storage/ is two levels below it).
REPO = Path(__file__).resolve().parents[2]
READY = "Uvicorn running on"
_FAILURE = re.compile(r"(Traceback|[\w.]*(Error|Exception|Panic)\b)")
IN_USE = "address already in use"
START_SECONDS = 45.0

_running: set[ServerProcess] = set()


def free_port() -> int:
    """A loopback port that nothing listens on at this instant."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerStartError(RuntimeError):
    pass


class ServerProcess:
    """One ``nsframe serve ROOT --port P`` process; ``root`` is a path or a URI, as given.
    With ``root_in_env`` the root goes in the ``NSFRAME_ROOT`` variable instead of the
    command line."""

    def __init__(self, root: str, log_dir: Path, name: str, *,
                 extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 root_in_env: bool = False) -> None:
        self.root = root
        self.root_in_env = root_in_env
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._start_offset = 0  # where this start's lines begin in the log
        self._log: IO[bytes] | None = None

    # ------------------------------------------------------------------ state
    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError(f"server {self.name} was never started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self, port: int) -> list[str]:
        root = [] if self.root_in_env else [self.root]
        return [sys.executable, "-m", "nsframe._cli", "serve", *root,
                "--port", str(port), *self.extra_args]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        if self.root_in_env:
            env["NSFRAME_ROOT"] = self.root
        inherited = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *([inherited] if inherited else [])])
        env["PYTHONUNBUFFERED"] = "1"
        return env

    # -------------------------------------------------------------- lifecycle
    def start(self, timeout: float = START_SECONDS) -> None:
        """Start on the previous port if there was one (else a free one); wait until ready."""
        if self.alive:
            raise RuntimeError(f"server {self.name} is already running")
        port = self.port or free_port()
        for attempt in range(3):
            offset = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._spawn(port)
            failure = self._wait_ready(port, offset, time.monotonic() + timeout)
            if failure is None:
                self.port = port
                self.starts += 1
                self._start_offset = offset
                return
            self.kill()
            if IN_USE in failure.lower() and attempt < 2:
                port = free_port()  # someone took the port: any other will do
                continue
            raise ServerStartError(f"server {self.name} did not start on port {port}: "
                                   f"{failure}\n{self.log_tail()}")
        raise AssertionError("unreachable")

    def _spawn(self, port: int) -> None:
        self._close_log()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed on kill
        self._log.write(f"\n=== start {self.starts + 1}: {' '.join(self.command(port))}\n"
                        .encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            self.command(port), cwd=REPO, env=self.environment(), stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        _running.add(self)

    def _wait_ready(self, port: int, offset: int, deadline: float) -> str | None:
        """None once the server logged its bind and answers on ``port``, else why not."""
        bound = False
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return f"exited with status {self.proc.returncode}: {self._log_since(offset)}"
            if not bound:
                bound = f"{READY} http://127.0.0.1:{port}" in self._log_since(offset)
            if bound:
                try:
                    resp = requests.post(f"http://127.0.0.1:{port}/v1/namespace/%24/exists",
                                         json={}, timeout=5)
                    # 401: it answers, and wants the API key it was given.
                    if resp.status_code in (200, 401):
                        return None
                except requests.RequestException:
                    pass
            time.sleep(0.05)
        return f"not ready after {START_SECONDS:.0f}s"

    def kill(self) -> None:
        """SIGKILL the whole process group and reap it: a crash, nothing gets to clean up."""
        self._signal(signal.SIGKILL, wait=10.0)

    def stop(self) -> None:
        """SIGTERM (uvicorn's graceful exit), SIGKILL after five seconds."""
        if self.alive:
            self._signal(signal.SIGTERM, wait=5.0)
        self.kill()

    def restart(self, timeout: float = START_SECONDS) -> None:
        self.kill()
        self.start(timeout)

    def _signal(self, sig: signal.Signals, wait: float) -> None:
        proc = self.proc
        if proc is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                if sig != signal.SIGKILL:
                    return
                raise
        if sig == signal.SIGKILL:
            _running.discard(self)
            self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # -------------------------------------------------------------------- log
    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def collected(self, timeout: float = 120.0) -> None:
        """Wait until this start's start-up collection ended (it runs beside serving,
        `nsframe.server._storage.startup`): it logs one line, however it ended."""
        deadline = time.monotonic() + timeout
        while "start-up collection of" not in self._log_since(self._start_offset):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no start-up collection ended within "
                                     f"{timeout:.0f}s\n{self.log_tail()}")
            time.sleep(0.1)

    def log_tail(self, lines: int = 40) -> str:
        text = self._log_since(0).splitlines()[-lines:]
        return f"--- {self.name} log ({self.log_path}) ---\n" + "\n".join(text)

    def log_errors(self, limit: int = 20) -> list[str]:
        """The log's error lines: logged failures and tracebacks' last lines."""
        found = [line for line in self._log_since(0).splitlines()
                 if " ERROR " in line or line.startswith("ERROR:") or _FAILURE.match(line)]
        return found[:limit]


def print_logs(servers: list[ServerProcess]) -> None:
    """Shown by pytest only when the test failed: what the servers logged as errors."""
    for server in servers:
        errors = server.log_errors()
        if errors:
            print(f"--- {server.name} error lines ({server.log_path}) ---")
            print("\n".join(errors))


def kept_running(servers: list[ServerProcess]) -> Iterator[list[ServerProcess]]:
    """A fixture's body: ``servers`` all running (one that died in an earlier test is
    restarted), their error lines shown after the test, and each still alive then."""
    for server in servers:
        if not server.alive:
            server.start()
    yield servers
    print_logs(servers)
    for server in servers:
        assert server.alive, f"{server.name} died during the test\n{server.log_tail()}"


@contextmanager
def cluster(root: str, count: int, log_dir: Path, *, extra_args: Sequence[str] = (),
            env: Mapping[str, str] | None = None,
            root_in_env: bool = False) -> Iterator[list[ServerProcess]]:
    """``count`` servers on one root, all started; all killed on the way out."""
    servers = [ServerProcess(root, log_dir, f"server{i}", extra_args=extra_args, env=env,
                             root_in_env=root_in_env)
               for i in range(count)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.kill()


@contextmanager
def serving_table(tmp: Path, table: str, data: pa.Table, *,
                  extra_args: Sequence[str] = ()) -> Iterator[ServerProcess]:
    """One server on a new root under ``tmp``, holding ``table`` (``"ns$name"``, its
    namespace made too) with ``data``."""
    namespace, _ = table.split("$")
    with cluster(str(tmp / "root"), 1, tmp, extra_args=extra_args) as (server,):
        made = [requests.post(f"{server.url}/v1/namespace/{namespace}/create", json={},
                              timeout=30),
                requests.post(f"{server.url}/v1/table/{table.replace('$', '%24')}/create",
                              data=ipc_stream(data), headers=ARROW_HEADERS, timeout=30)]
        assert [m.status_code for m in made] == [200, 200], [m.text for m in made]
        yield server


def _kill_leftovers() -> None:  # a last resort, should a fixture never reach its finally
    for server in list(_running):
        server.kill()


atexit.register(_kill_leftovers)
