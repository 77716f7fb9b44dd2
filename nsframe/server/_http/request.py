"""Reading request input: the JSON body's bytes, and SQL conditions made whole.

Members are checked by the operation's request model (`validation`), not here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Coroutine, Generator
from typing import Any, cast

import anyio
from starlette.requests import Request

from nsframe._protocol.in_process import IN_PROCESS
from nsframe._protocol.sql import closes_unopened
from nsframe.exceptions import APIError, InvalidInputError, PayloadTooLargeError
from nsframe.server._limits import Limits

DEFAULT_JSON_LIMIT = 16 * 1024 * 1024


def body_timeout(detail: str) -> APIError:
    """408: the client stopped sending its body, or sent it too slowly.

    The connection is closed after the answer: the rest of that body may still come,
    and nothing good can follow it on the same connection.
    """
    return APIError(detail, status=408, code=13, type="/errors/request-timeout",
                    title="Request Timeout", headers={"Connection": "close"})


class Progress:
    """When a body falls below the minimum rate: it must bring ``need`` bytes in every
    stretch of ``window`` seconds after its first (`Limits.body_min_rate_bytes`).
    Times are seconds spent waiting for the client (`timed`).

    ``marks`` are (time, bytes so far) at each chunk; the stretch ending at ``t`` holds
    ``received - bytes at (t - window)``, which drops below ``need`` once ``t - window``
    passes the first mark above ``received - need``. Older marks are dropped.
    """

    def __init__(self, start: float, rate: int, window: float) -> None:
        self.need = rate * window
        self.window = window
        self.received = 0
        self.marks: deque[tuple[float, int]] = deque([(start, 0)])

    def add(self, now: float, size: int) -> None:
        self.received += size
        self.marks.append((now, self.received))
        # The last mark is always kept: it is above received - need.
        while self.marks[0][1] <= self.received - self.need:
            self.marks.popleft()

    @property
    def deadline(self) -> float:
        return self.marks[0][0] + self.window


async def timed(chunks: AsyncIterable[bytes], limits: Limits, *,
                min_rate: bool = True) -> AsyncIterator[bytes]:
    """``chunks`` as they come, but at most `body_idle_timeout` seconds apart, all
    within `body_timeout`, and (``min_rate``) at `body_min_rate_bytes` per second at
    least: a client that stalls or trickles half-way cannot hold the request (and the
    worker thread and upload slot it holds) for long."""
    idle, total = limits.body_idle_timeout, limits.body_timeout
    deadline = anyio.current_time() + total
    # The rate is measured in the time spent waiting for the client only: while the
    # reader is busy (Lance writing, a full prefetch buffer) the client cannot send.
    waited = 0.0
    # Without a minimum rate: a stretch as long as the whole body, so never the first out.
    progress = Progress(0.0, limits.body_min_rate_bytes,
                        limits.body_rate_window if min_rate else total)
    iterator = chunks.__aiter__()
    while True:
        now = anyio.current_time()
        # The limit that runs out first (on a tie, the first listed), and when.
        wait, limit = min((idle, "body_idle_timeout"), (deadline - now, "body_timeout"),
                          (progress.deadline - waited, "body_min_rate_bytes"),
                          key=lambda candidate: candidate[0])
        chunk: bytes | None = None
        step = iterator.__anext__()
        try:
            if wait > 0 and isinstance(step, (Coroutine, Generator)):
                # A chunk already there (a small body comes with its headers) arrives
                # without waiting, and then no limit can run out: no cancel scope for it.
                chunk = await _without_scope_if_ready(step, wait)
            else:
                with anyio.move_on_after(max(wait, 0.0)):
                    chunk = await step
        except StopAsyncIteration:
            return
        if chunk is None:
            raise _too_slow(limits, limit)
        waited += anyio.current_time() - now
        progress.add(waited, len(chunk))
        yield chunk


async def _without_scope_if_ready(step: Coroutine[Any, Any, bytes] | Generator[Any, Any, bytes],
                                  wait: float) -> bytes | None:
    """What ``step`` (an ``__anext__`` awaitable) returns, None when it has to wait longer
    than ``wait`` seconds. It runs at once up to its first wait; only if it does wait is
    the rest awaited under a cancel scope (as ``yield from`` would resume it)."""
    try:
        first = step.send(None)
    except StopIteration as done:
        return cast(bytes, done.value)
    with anyio.move_on_after(wait):
        return await _Resumed(step, first)
    return None


class _Resumed:
    """The rest of a coroutine's await after its first suspension, which yielded
    ``first``: what the event loop sends or throws in goes on to the coroutine."""

    def __init__(self, step: Coroutine[Any, Any, bytes] | Generator[Any, Any, bytes],
                 first: Any) -> None:
        self.step = step
        self.first = first

    def __await__(self) -> Generator[Any, Any, bytes]:
        step, value = self.step, self.first
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                step.close()
                raise
            except BaseException as exc:  # a cancellation, thrown in by the task
                try:
                    value = step.throw(exc)
                except StopIteration as done:
                    return cast(bytes, done.value)
            else:
                try:
                    value = step.send(sent)
                except StopIteration as done:
                    return cast(bytes, done.value)


def _too_slow(limits: Limits, limit: str) -> APIError:
    """The 408 of ``limit``, which ran out."""
    if limit == "body_min_rate_bytes":
        return body_timeout(
            f"The request body arrived slower than this server's minimum of "
            f"{limits.body_min_rate_bytes} bytes per second over {limits.body_rate_window:g} "
            "s (body_min_rate_bytes, body_rate_window): nothing was written. Send the body "
            "without long pauses, or over a faster connection."
        )
    if limit == "body_timeout":
        return body_timeout(
            f"The request body took longer than {limits.body_timeout:g} s, this server's "
            "limit (body_timeout): nothing was written. Send smaller requests."
        )
    return body_timeout(
        f"No byte of the request body arrived for {limits.body_idle_timeout:g} s "
        "(body_idle_timeout): nothing was written."
    )


def in_process(request: Request) -> bool:
    return bool(request.scope.get(IN_PROCESS, False))


def body_chunks(request: Request) -> AsyncIterator[bytes]:
    """The request's body under `timed`'s limits. The embedded client's own body in
    process holds no upload slot, and may come as slowly as the caller's generator
    makes it: only the idle and total timeouts apply to it."""
    return timed(request.stream(), limits_of(request), min_rate=not in_process(request))


def limits_of(request: Request) -> Limits:
    config = getattr(request.app.state, "config", None)
    return config.limits if config is not None else Limits()


async def read_body(request: Request, *, limit: int | None = None) -> bytes:
    """The JSON body of ``request`` as bytes, refused above the server's size limit and
    when it arrives too slowly (`timed`).

    `validation.decode` parses it into the operation's request model.
    """
    if limit is None:
        limit = int(getattr(request.app.state, "max_json_bytes", DEFAULT_JSON_LIMIT))
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"The JSON body is {int(declared)} bytes; this server accepts at most {limit}."
        )
    if declared and in_process(request) and "transfer-encoding" not in request.headers:
        # The embedded client hands a body of bytes over whole, in one message that never
        # waits (`nsframe._client.inprocess`; a body it pulls from an iterator is sent
        # chunked): no limit of `timed` could run out while it is read.
        body = await request.body()
        if len(body) > limit:
            raise PayloadTooLargeError(f"The JSON body is larger than {limit} bytes.")
        return body
    chunks: list[bytes] = []
    size = 0
    async for chunk in body_chunks(request):
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"The JSON body is larger than {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


def whole_condition(predicate: str, what: str = "predicate") -> str:
    """``predicate`` wrapped so that Lance must parse all of it.

    Lance's SQL parser stops after the first complete expression and ignores the rest,
    so ``id = 1 AMD name = 'x'`` (a typo) would silently mean ``id = 1``. In parentheses,
    trailing text is a syntax error instead. A newline ends a trailing ``--`` comment; it
    is added only when one may be there, since Lance records the predicate as sent.
    A ``)`` that closes nothing is refused first: wrapped, ``id = 1) OR (true`` would
    become a valid condition the client never wrote.
    """
    if closes_unopened(predicate):
        raise InvalidInputError(
            f"The {what} {predicate!r} has a ')' without a matching '(': check its "
            "parentheses."
        )
    return f"({predicate}\n)" if "--" in predicate else f"({predicate})"


def column_names(request: Request, parameter: str, given: str | None) -> list[str]:
    """The columns a query parameter lists (``?on=id``, ``?primary_key=a,b``): repeated
    parameters, each possibly a comma-separated list (a comma inside a backtick-quoted
    segment belongs to the name); ``given`` when the query string has none."""
    names: list[str] = []
    for text in request.query_params.getlist(parameter) or [given or ""]:
        current, quoted = "", False
        for char in text:
            if char == "`":
                quoted = not quoted
            if char == "," and not quoted:
                names.append(current.strip())
                current = ""
            else:
                current += char
        names.append(current.strip())
    return [name for name in names if name]
