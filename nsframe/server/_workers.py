"""`nsframe serve`: server processes (workers) under a supervising parent, on one port.

The parent binds the listening socket and keeps it; workers accept from it. So a worker
that dies (a native crash in Lance, the OOM killer) never closes the port: connections
wait in the socket's queue, or go to another worker, while the parent starts a new one.
uvicorn's `Multiprocess` supervisor does the starting, health checks and restarting;
`Supervisor` adds what a crash needs: one log line naming the worker, how it ended and
the requests it was running (from its `_inflight` file, redacted), and a stop when
workers keep dying before they serve, rather than a silent restart loop.

With several workers, throughput under concurrent clients grows past one process's GIL;
the storage layer is correct with any number of processes on one root
(docs/storage.md). Each worker builds its app from the config in the child
(`worker_app` is the factory), so nothing opened in the parent (datasets, leases, the
start-up collection) is ever shared across a fork.

A stop (SIGTERM, SIGINT) reaches every worker, from the supervisor or from the process
group: each turns readiness off, serves on for ``drain_delay``, then drains within
``graceful_timeout`` (`_lifecycle.DrainOnSignals`); the supervisor lets go of the port
and kills a worker still running past both, plus `STOP_MARGIN`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from socket import socket

import uvicorn
from prometheus_client import multiprocess
from starlette.types import ASGIApp
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from nsframe.server import _inflight, _logs
from nsframe.server._app import create_app
from nsframe.server._config import ServerConfig
from nsframe.server._http.metrics import MULTIPROC_ENV
from nsframe.server._lifecycle import DrainOnSignals
from nsframe.server._security.access_log import _SECRET_KEY
from nsframe.server._storage.leases import pid_alive

log = logging.getLogger("nsframe.server.workers")

# Workers that die before their app is built, this many times in a row, stop the server:
# whatever kills them would kill every replacement.
STARTUP_DEATHS = 3
# How long a worker may take to answer the supervisor's ping before it is killed as hung.
# uvicorn's 5 s is shorter than a worker's start on a busy machine (importing pylance and
# pyarrow alone took 4 s at a load of 12 on 2 cores): it killed workers that were starting.
HEALTHCHECK_SECONDS = 30
# How long past its drain delay and graceful timeout a stopping worker may take to close
# its catalogs and exit before the supervisor kills it.
STOP_MARGIN = 5.0
# The folders of `nsframe serve` in shared memory: a prefix, the supervisor's pid, a dash.
METRICS_PREFIX = "nsframe-metrics-"  # prometheus_client's multiprocess files
SLOTS_PREFIX = "nsframe-workers-"  # each worker's requests in flight (`_inflight`)


def serve_workers(config: ServerConfig, *, host: str, port: int, workers: int,
                  log_level: str) -> int:
    """Serve ``config`` with ``workers`` processes until stopped (SIGINT or SIGTERM);
    the exit status: 1 when workers could not be kept running, else 0."""
    with _own_folder(SLOTS_PREFIX) as slots, _metrics_folder(config.metrics):
        # uvicorn.run() insists on an import string for workers, only so that it can
        # spawn them; a picklable factory does the same without exposing the config (its
        # secrets) through the environment or a file: it travels over the spawn pipe.
        app = functools.partial(worker_app, config=config, slots=slots)
        # (uvicorn types the graceful timeout int; it is asyncio.wait_for's, a float.)
        settings = uvicorn.Config(app, factory=True, host=host, port=port, workers=workers,
                                  log_level=log_level,
                                  log_config=_logs.logging_config(log_level, config.log_format),
                                  access_log=False,
                                  timeout_worker_healthcheck=HEALTHCHECK_SECONDS,
                                  timeout_graceful_shutdown=config.graceful_timeout)  # type: ignore[arg-type]
        supervisor = Supervisor(settings, [settings.bind_socket()], slots=Path(slots),
                                secrets=_credentials(config),
                                stop_seconds=config.drain_delay + config.graceful_timeout
                                + STOP_MARGIN)
        supervisor.run()
    return 1 if supervisor.failed else 0


@contextlib.contextmanager
def _metrics_folder(enabled: bool) -> Iterator[None]:
    """prometheus_client's multiprocess mode: each worker writes its metrics to files in a
    private folder, and a scrape of any worker adds up all of them (`_http.metrics`).

    A new empty folder for every start (a count left by an earlier run would be added
    in). Set in the environment before any worker is spawned: the client library picks
    its mode as it is imported, in the worker.
    """
    if not enabled:
        yield
        return
    before = os.environ.get(MULTIPROC_ENV)
    with _own_folder(METRICS_PREFIX) as folder:
        os.environ[MULTIPROC_ENV] = folder
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(MULTIPROC_ENV, None)
            else:
                os.environ[MULTIPROC_ENV] = before


@contextlib.contextmanager
def _own_folder(prefix: str) -> Iterator[str]:
    """A new folder named ``prefix``, this supervisor's pid and a dash, in shared memory
    where there is some; removed on the way out. The folders of supervisors that were
    killed (SIGKILL cleans nothing up) are removed first, or they would pile up in memory."""
    base = _shared_memory()
    _remove_orphans(Path(base or tempfile.gettempdir()), prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-", dir=base) as folder:
        yield folder


def _remove_orphans(base: Path, prefix: str) -> None:
    """Remove the ``prefix`` folders of supervisors that no longer run. One named with
    this process's pid is an orphan too: this supervisor has not made its own yet."""
    if os.name == "nt":  # os.kill(pid, 0) would end the process there, not probe it
        return
    for folder in base.glob(f"{prefix}*-*"):
        pid = folder.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and folder.is_dir() and folder.stat().st_uid == os.getuid() \
                and (int(pid) == os.getpid() or not pid_alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def worker_app(*, config: ServerConfig, slots: str) -> ASGIApp:
    """A worker's app (called in the worker): the server, noting what it runs.

    No `faulthandler`: its stack dump made a worker sent SIGSEGV hang, unanswering, for
    the 30 s of the health check in one run of three, rather than end at once.
    """
    _logs.capture_warnings(config.log_format)
    app = create_app(config=config, collect_garbage=False)  # the parent collects
    if threading.current_thread() is threading.main_thread():
        # Called while uvicorn starts, its signal handlers in place: SIGTERM turns
        # readiness off first, and the drain starts `drain_delay` seconds later.
        DrainOnSignals(app.lifecycle, config.drain_delay).install()
    return _inflight.InFlight(app, Path(slots) / str(os.getpid()))


class Supervisor(Multiprocess):
    """uvicorn's supervisor, reporting each worker that ends unexpectedly."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket], *, slots: Path,
                 secrets: frozenset[str], stop_seconds: float) -> None:
        super().__init__(config, sockets)
        self.slots = slots
        self.secrets = secrets
        self.stop_seconds = stop_seconds
        self.failed = False
        self._startup_deaths = 0
        self._started: set[str] = set()
        self._known: set[int] = set()

    def keep_subprocess_alive(self) -> None:
        # A signal waiting to be handled may be the stop that ends the workers.
        if self.should_exit.is_set() or self.signal_queue:
            return
        ended = [p for p in self.processes if p.exitcode is not None]
        for process in ended:
            self._report(process, hung=False)
        if self.should_exit.is_set():
            return
        earlier = list(self.processes)
        super().keep_subprocess_alive()  # replaces the dead, and kills and replaces the hung
        for process in earlier:
            if process not in self.processes and process not in ended:
                self._report(process, hung=True)
        self._forget_retired()
        self._bury_metrics()

    def _bury_metrics(self) -> None:
        """Drop the gauges of workers that are gone (in flight, lane slots): their
        counters stay in the sums, their "now" values must not."""
        alive = {p.pid for p in self.processes if p.pid is not None}
        if MULTIPROC_ENV in os.environ:
            for pid in self._known - alive:
                multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
        self._known = alive

    def terminate_all(self) -> None:
        """Forward the stop to every worker, and let go of the listening socket: the port
        closes once the workers stop accepting (after their drain delay), instead of
        queueing connections that no one will accept until this parent exits."""
        for sock in self.sockets:
            sock.close()
        super().terminate_all()

    def join_all(self) -> None:
        """Wait for the workers to drain and exit, killing any still running
        ``stop_seconds`` after the stop: a request longer than the graceful timeout
        does not hold the server up (its write is not acknowledged)."""
        deadline = time.monotonic() + self.stop_seconds
        for process in self.processes:
            process.process.join(max(0.0, deadline - time.monotonic()))
            if process.exitcode is None:
                log.error("worker [%s] did not stop within %.0f s (drain delay, graceful "
                          "timeout and a margin): killing it", process.pid, self.stop_seconds)
                process.kill()
                process.process.join()

    def _report(self, process: Process, *, hung: bool) -> None:
        pid, code = process.pid, process.exitcode
        slot = self.slots / str(pid)
        if code == STARTUP_FAILURE:  # the app refused to start: uvicorn says so and stops
            self.failed = True
            return
        if hung:
            how = (f"did not answer the supervisor within "
                   f"{self.config.timeout_worker_healthcheck}s and was killed")
        elif code is not None and code < 0:
            how = f"was killed by {_signal_name(-code)}"
        else:
            how = f"exited with status {code}"
        if not slot.exists():  # it died before its app was built
            self._startup_deaths += 1
            log.error("worker [%s] %s while starting (%d in a row)", pid, how,
                      self._startup_deaths)
            if self._startup_deaths >= STARTUP_DEATHS:
                log.error("workers keep dying while starting: stopping the server")
                self.failed = True
                self.should_exit.set()
            return
        running, untracked = _inflight.read(slot)
        slot.unlink()
        log.error("worker [%s] %s while running %s; restarting it", pid, how,
                  _inflight.describe(running, untracked, secrets=self.secrets))

    def _forget_retired(self) -> None:
        """Note the workers that started since; remove the files of those that ended as
        asked (SIGHUP, SIGTTOU)."""
        current = {str(p.pid) for p in self.processes}
        names = set(os.listdir(self.slots))
        if (names & current) - self._started:
            self._startup_deaths = 0  # a worker started: the deaths are no longer in a row
        self._started = names & current
        for name in names - current:
            (self.slots / name).unlink(missing_ok=True)


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


def _shared_memory() -> str | None:
    """Memory-backed ``/dev/shm`` where there is one: the files are never written to disk."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _credentials(config: ServerConfig) -> frozenset[str]:
    """Secrets of the config a request could echo: keys, tokens, the JWT settings'."""
    found = {*config.api_keys, *config.tokens}
    found.update(str(v) for k, v in (config.jwt or {}).items()
                 if isinstance(v, str) and _SECRET_KEY.search(k))
    return frozenset(found)
