"""A server's life once built: liveness and readiness probes, the drain on SIGTERM, and
the close that stops every thread it started (docs/operations.md).

- ``GET /healthz`` (liveness) answers 200 while the process answers at all; it touches
  no store.
- ``GET /readyz`` (readiness) answers 200 while the default root's store answers one
  small request (a HEAD, made at most once a second however often it is polled), 503
  while the server drains or when the store does not answer (why goes to the log).

Both are answered here, outside every other layer: no credential, no Host check, no
capacity lane (a saturated server still answers), no access log line, and a body of one
member, ``status``, that tells nothing else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from nsframe._protocol.routes import HEALTH_PATH, JSON, READY_PATH
from nsframe.server._storage.catalog import Catalog

log = logging.getLogger("nsframe.server")

# How long one readiness answer stands, and how long the store may take to give one.
READY_TTL = 1.0
READY_TIMEOUT = 2.0


class Readiness:
    """Whether the store answers, asked at most once per `READY_TTL` and by one thread
    at a time: a load balancer polling many times a second costs one request a second."""

    def __init__(self, catalogs: Mapping[str, Catalog]) -> None:
        self.catalogs = catalogs
        self._lock = threading.Lock()
        self._ok = True  # start-up has just read and written the store
        self._checked = -math.inf
        self._probing_since = math.inf

    def cached(self) -> bool | None:
        """The last answer while it stands, else None (`check` asks again)."""
        return self._ok if time.monotonic() - self._checked < READY_TTL else None

    def check(self) -> bool:
        """Ask the store (blocking: run in a worker thread)."""
        if not self._lock.acquire(blocking=False):
            # Another request is asking: its predecessor's answer, unless it takes too long.
            return self._ok and time.monotonic() - self._probing_since < READY_TIMEOUT
        try:
            if time.monotonic() - self._checked < READY_TTL:
                return self._ok
            self._probing_since = time.monotonic()
            try:
                self.catalogs[""].ping(READY_TIMEOUT)
                ok = True
            except Exception as exc:  # whatever the store raised: not ready, say why once
                ok = False
                if self._ok:
                    log.warning("readiness: the store did not answer: %s", exc)
            if ok and not self._ok:
                log.warning("readiness: the store answers again")
            self._ok, self._checked = ok, time.monotonic()
            return ok
        finally:
            self._probing_since = math.inf
            self._lock.release()


class Lifecycle:
    """The server's catalogs and whether it is draining; `close` ends both."""

    def __init__(self, catalogs: Mapping[str, Catalog]) -> None:
        # The app's catalogs by database ("" the default one), filled while it is built.
        self.catalogs = catalogs
        self.readiness = Readiness(catalogs)
        self._draining = threading.Event()
        self._closed = False
        self._lock = threading.Lock()

    @property
    def draining(self) -> bool:
        return self._draining.is_set()

    def drain(self) -> None:
        """From now on readiness answers 503; everything else is served as before."""
        self._draining.set()

    def close(self) -> None:
        """Drain, then close every catalog (their lease renewal threads, their server
        records). Once only; safe from any thread."""
        self.drain()
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for catalog in self.catalogs.values():
            try:
                catalog.close()
            except Exception as exc:  # a store gone away: the others still close
                log.warning("could not close the catalog of %s: %s", catalog.root, exc)


class LifecycleApp:
    """The outermost ASGI layer: answers the probes, and closes the catalogs when the
    ASGI server ends the app's lifespan."""

    def __init__(self, app: ASGIApp, lifecycle: Lifecycle) -> None:
        self.app = app
        self.lifecycle = lifecycle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif (scope["type"] == "http" and scope["path"] in (HEALTH_PATH, READY_PATH)
                and scope["method"] in ("GET", "HEAD")):
            status = await self._status(scope["path"])
            await _answer(send, status, head=scope["method"] == "HEAD")
        else:
            await self.app(scope, receive, send)

    async def _status(self, path: str) -> str:
        if path == HEALTH_PATH:
            return "ok"
        if self.lifecycle.draining:
            return "draining"
        readiness = self.lifecycle.readiness
        ok = readiness.cached()
        if ok is None:
            ok = False
            # The store's client gives up by itself after READY_TIMEOUT; this is a bound
            # for the thread as well.
            with anyio.move_on_after(READY_TIMEOUT + 1):
                ok = await anyio.to_thread.run_sync(readiness.check, abandon_on_cancel=True)
        # A drain that began while the store was asked wins.
        return "draining" if self.lifecycle.draining else "ok" if ok else "unavailable"

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Closing deletes the server's records: store requests, off the event loop.
                await anyio.to_thread.run_sync(self.lifecycle.close)
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _answer(send: Send, status: str, *, head: bool) -> None:
    body = json.dumps({"status": status}).encode()
    headers = [(b"content-type", JSON.encode()), (b"cache-control", b"no-store"),
               (b"content-length", str(len(body)).encode())]
    if status != "ok":
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": 200 if status == "ok" else 503,
                "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


class DrainOnSignals:
    """SIGTERM and SIGINT in a process that uvicorn serves from its main thread (each
    worker of ``nsframe serve``): readiness turns 503 at once, and uvicorn's own handler
    (stop accepting, let requests in flight finish within ``graceful_timeout``, end the
    lifespan) runs ``delay`` seconds later, the time a load balancer takes to notice.

    Another SIGTERM meanwhile changes nothing (the supervisor forwards the one its
    process group got); another SIGINT, a second Ctrl-C, skips the rest of the delay,
    and a third forces the exit, as uvicorn's second Ctrl-C does.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, lifecycle: Lifecycle, delay: float) -> None:
        self.lifecycle = lifecycle
        self.delay = delay
        self._loop = asyncio.get_running_loop()
        self._handlers: dict[int, Callable[[int, FrameType | None], Any]] = {}
        self._signalled = False
        self._forwarded = False

    def install(self) -> None:
        """Wrap the handlers uvicorn installed (call from the main thread)."""
        for sig in self.SIGNALS:
            handler = signal.getsignal(sig)
            if callable(handler):
                self._handlers[sig] = handler
                signal.signal(sig, self._on_signal)

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        if self._forwarded:
            self._handlers[sig](sig, frame)
            return
        if not self._signalled:
            self._signalled = True
            self.lifecycle.drain()
            log.info("received %s: readiness answers 503; stopping in %.1f s",
                     signal.Signals(sig).name, self.delay)
            if self.delay > 0:
                self._loop.call_soon_threadsafe(self._loop.call_later, self.delay,
                                                self._forward, sig)
                return
        elif sig != signal.SIGINT:
            return
        self._forward(sig)

    def _forward(self, sig: int) -> None:
        if not self._forwarded:
            self._forwarded = True
            self._handlers[sig](sig, None)
