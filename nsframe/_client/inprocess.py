"""`EmbeddedTransport`: the embedded server without the socket, its ASGI app called in
process.

`nsframe.connect(path)` runs the real server in a thread of this process. Talking to it
over loopback HTTP costs, per call, the client's and the server's HTTP work, a socket
round trip and two thread switches (measured in benchmarks/README.md). This transport
sends each request to the very same ASGI app instead, from the route down: the same
middleware (credentials, access log), routing, validation and handlers answer it. Only
the bytes on the wire are skipped.

Each calling thread drives the app on an event loop of its own, so threads never wait
for one another here. The scope says the request is in process, and the handler of a
JSON request then runs on that calling thread directly: the thread is blocked on this
call anyway, so the hop to a worker thread that protects a shared event loop buys
nothing (`server/_http/handler.endpoint`). Arrow bodies (inserts) still go through a
worker thread, pulled from the caller's iterator while Lance writes.

The answer's body is read from the app's body messages as they come: a large result is
decoded while the app produces it, never held twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote, urlsplit

from nsframe._client.exchange import (
    NO_LIMITS,
    Body,
    ConnectError,
    Headers,
    ReadError,
    Request,
    Response,
    Timeout,
    framed,
)
from nsframe._protocol.in_process import ACCEPTS_ARROW, ARROW_MEMBER, IN_PROCESS

# Body bytes the app may produce ahead of the reader before it waits.
AHEAD_BYTES = 8 << 20

log = logging.getLogger("nsframe.client")

Message = MutableMapping[str, Any]
App = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]],
                Callable[[Message], Awaitable[None]]], Awaitable[None]]


class EmbeddedTransport:
    """Sends requests straight to an ASGI app in this process (the embedded server's,
    which `nsframe.connect(path)` uses by default).

    Args:
        app: The ASGI application that answers.
        arrow: Let the app hand a query's result over as Arrow data, not IPC bytes
            (nsframe's server does for a result that fits one plain body).

    ``timeout`` does not apply: there is no connection to lose, and the work is the
    calling thread's own.
    """

    def __init__(self, app: App, *, arrow: bool = True) -> None:
        self._app = app
        self._arrow = arrow
        self._local = threading.local()
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return "EmbeddedTransport()"

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop: asyncio.AbstractEventLoop | None = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed():
            loop = asyncio.new_event_loop()
            self._local.loop = loop
            with self._lock:
                self._loops.append(loop)
        return loop

    def close(self) -> None:
        """Close the event loops of the threads that called (none may be running)."""
        with self._lock:
            self._closed = True
            loops, self._loops = self._loops, []
        for loop in loops:
            with contextlib.suppress(RuntimeError):
                loop.close()

    def send(self, method: str, url: str, *, headers: Mapping[str, str], body: Body = None,
             timeout: Timeout = NO_LIMITS, stream: bool = False) -> Response:
        """What the app would answer this request over HTTP."""
        if self._closed:
            # As a stopped server's closed port answers.
            raise ConnectError(f"{method} {url}: the embedded server has stopped.")
        parts = urlsplit(url)
        path = parts.path or "/"
        # The headers an HTTP request would carry, Host and framing included (a server
        # may pick the database from the host).
        sent = framed(method, {"Host": parts.netloc, **headers}, body)
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1", "method": method, "scheme": "http",
            "path": unquote(path), "raw_path": path.encode("latin-1"),
            "query_string": parts.query.encode("latin-1"), "root_path": "",
            "headers": [(k.lower().encode("latin-1"), str(v).encode("latin-1"))
                        for k, v in sent.items()],
            "server": (parts.hostname or "127.0.0.1", parts.port or 80),
            "client": ("127.0.0.1", 0), IN_PROCESS: True, ACCEPTS_ARROW: self._arrow,
        }
        exchange = _Exchange(self._loop(), self._app, scope, body)
        try:
            exchange.start()
        except BaseException:  # Ctrl-C in the middle of it, say
            exchange.abandon()
            raise
        if exchange.client_error is not None:
            exchange.close()
            raise exchange.client_error
        response = Response(exchange.status,
                            Headers((k.decode("latin-1"), v.decode("latin-1"))
                                    for k, v in exchange.headers),
                            Request(method, url, sent), stream=exchange,
                            arrow=exchange.arrow)
        if not stream:
            response.content  # noqa: B018 - read the whole body now
        return response


def _run_until_complete(loop: asyncio.AbstractEventLoop, step: Awaitable[Any]) -> None:
    """``loop.run_until_complete(step)``, also from a thread whose own event loop is
    running (a Jupyter kernel runs cells inside one). The caller is blocked on this call
    either way, so that loop cannot run meanwhile: it is set aside for the step and put
    back after, as if the call had been a blocking socket read."""
    outer = asyncio.events._get_running_loop()
    if outer is None:
        loop.run_until_complete(step)
        return
    asyncio.events._set_running_loop(None)
    try:
        loop.run_until_complete(step)
    finally:
        asyncio.events._set_running_loop(outer)


class _Exchange:
    """One request to the app, driven on the caller's own event loop; also the
    response's body stream, whose reads run the loop until the app has sent enough."""

    def __init__(self, loop: asyncio.AbstractEventLoop, app: App,
                 scope: dict[str, Any], body: Body) -> None:
        self._loop = loop
        self._app = app
        self._scope = scope
        self._body = body
        self._request_sent = False
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self._pieces: deque[memoryview] = deque()
        self._buffered = 0
        self._complete = False  # the last body message arrived (or the app ended)
        # A message arrived since the caller last looked, and the future the caller's
        # loop runs until one does (a plain future: no task per wait).
        self._news = False
        self._waiter: asyncio.Future[None] | None = None
        self._space = asyncio.Event()
        self._finished = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.client_error: BaseException | None = None
        self.arrow: Any = None  # a result the app handed over as Arrow data
        self.closed = False
        self._broken = False

    # ---------------------------------------------------------------- the app's side
    async def _receive(self) -> Message:
        if self._request_sent:
            # The body is all there: a later receive() waits for the client to go away.
            await self._finished.wait()
            return {"type": "http.disconnect"}
        body = self._body
        if body is None or isinstance(body, (bytes, bytearray, memoryview)):
            self._request_sent = True
            return {"type": "http.request", "body": bytes(body or b""), "more_body": False}
        try:
            chunk = next(body)
        except StopIteration:
            self._request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        except Exception as exc:  # the caller's data failed: as if it hung up
            self.client_error = exc
            self._request_sent = True
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def _send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status = int(message["status"])
            self.headers = list(message.get("headers") or [])
            self.arrow = message.get(ARROW_MEMBER)
        elif kind == "http.response.body":
            body = message.get("body") or b""
            if body:
                view = memoryview(body)
                if view.format != "B" or view.ndim != 1:
                    view = view.cast("B")
                self._pieces.append(view)
                self._buffered += view.nbytes
            if not message.get("more_body", False):
                self._complete = True
        self._wake()
        while self._buffered > AHEAD_BYTES and not self.closed:
            self._space.clear()
            await self._space.wait()

    async def _run(self) -> None:
        try:
            await self._app(self._scope, self._receive, self._send)
        except (KeyboardInterrupt, SystemExit):
            raise  # the caller's, not the server's: asyncio hands them to the caller
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and self.closed:
                return
            # As an ASGI server does: log it; a request with no answer yet gets a 500.
            log.error("Exception in the embedded server's ASGI app", exc_info=exc)
            if self.status and not self._complete:
                self._broken = True  # as a connection closed mid-body reads
            if not self.status:
                self.status = 500
                self.headers = [(b"content-type", b"text/plain; charset=utf-8")]
                self._pieces.append(memoryview(b"Internal Server Error"))
        finally:
            self._complete = True
            self._wake()

    def _wake(self) -> None:
        self._news = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ---------------------------------------------------------------- the caller's side
    def _pump(self) -> None:
        """Run the loop until the app sends something (or ends)."""
        if self._news:  # it did while the loop last ran: look at that first
            self._news = False
            return
        self._waiter = self._loop.create_future()
        try:
            _run_until_complete(self._loop, self._waiter)
        finally:
            self._waiter = None
        self._news = False

    def start(self) -> None:
        """Run the app until the status line is known."""
        self._task = self._loop.create_task(self._run())
        while not self.status and not self._complete:
            self._pump()

    def read(self, amt: int | None = None) -> bytes:
        if amt is None or amt < 0:
            while not self._complete:
                self._pump()
            if self._broken:
                raise ReadError("The embedded server's answer ended before its end.")
            out = b"".join(self._pieces)
            self._pieces.clear()
            self._buffered = 0
            self._finish()
            return out
        taken: list[memoryview] = []
        need = amt
        while need > 0:
            if not self._pieces:
                self._check_whole()
                if self._complete:
                    break
                self._pump()
                continue
            head = self._pieces[0]
            if head.nbytes <= need:
                taken.append(self._pieces.popleft())
                need -= head.nbytes
            else:
                taken.append(head[:need])
                self._pieces[0] = head[need:]
                need = 0
        self._buffered -= amt - need
        if self._buffered <= AHEAD_BYTES // 2:
            self._space.set()
        if self._complete and not self._pieces:
            self._finish()
        return taken[0].tobytes() if len(taken) == 1 else b"".join(taken)

    def _check_whole(self) -> None:
        if self._broken and not self._pieces:
            raise ReadError("The embedded server's answer ended before its end.")

    def readinto(self, target: memoryview) -> int:
        """Fill ``target`` with the next body bytes (one copy, from the app's buffers);
        0 at the end."""
        while not self._pieces and not self._complete:
            self._pump()
        self._check_whole()
        filled = 0
        while self._pieces and filled < target.nbytes:
            head = self._pieces[0]
            n = min(head.nbytes, target.nbytes - filled)
            target[filled:filled + n] = head[:n]
            if n == head.nbytes:
                self._pieces.popleft()
            else:
                self._pieces[0] = head[n:]
            filled += n
        self._buffered -= filled
        if self._buffered <= AHEAD_BYTES // 2:
            self._space.set()
        if self._complete and not self._pieces:
            self._finish()
        return filled

    def _finish(self) -> None:
        """The whole answer is here: let the app run to its end (the access log...)."""
        self._finished.set()  # a receive() from now on is the client going away
        self._space.set()
        task = self._task
        if task is not None and not task.done():
            _run_until_complete(self._loop, task)

    def abandon(self) -> None:
        """Give the request up without running the loop any further."""
        self.closed = True
        task = self._task
        if task is None:
            return
        if task.done():
            if not task.cancelled():
                task.exception()  # seen: asyncio need not warn that nobody looked
        else:
            task.cancel()

    def close(self) -> None:
        """Let the app finish (or stop it, if its answer was not read to the end)."""
        if self.closed:
            return
        self.closed = True
        self._finished.set()
        self._space.set()
        task = self._task
        if task is not None and not task.done():
            if not self._complete:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                _run_until_complete(self._loop, task)
        self._pieces.clear()
