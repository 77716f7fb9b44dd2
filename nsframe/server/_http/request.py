"""Reading request input: the JSON body's bytes, and SQL conditions made whole.

Members are checked by the operation's request model (`validation`), not here.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import anyio
from starlette.requests import Request

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


async def timed(chunks: AsyncIterable[bytes], limits: Limits) -> AsyncIterator[bytes]:
    """``chunks`` as they come, but at most `body_idle_timeout` seconds apart and all
    within `body_timeout`: a client that stalls half-way cannot hold the request (and
    the worker thread reading it) for ever."""
    idle, total = limits.body_idle_timeout, limits.body_timeout
    deadline = anyio.current_time() + total
    iterator = chunks.__aiter__()
    while True:
        left = deadline - anyio.current_time()
        wait = min(idle, left)
        chunk: bytes | None = None
        with anyio.move_on_after(max(wait, 0.0)):
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
        if chunk is None:
            if wait < idle:
                raise body_timeout(
                    f"The request body took longer than {total:g} s, this server's limit "
                    "(body_timeout): nothing was written. Send smaller requests."
                )
            raise body_timeout(
                f"No byte of the request body arrived for {idle:g} s (body_idle_timeout): "
                "nothing was written."
            )
        yield chunk


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
    chunks: list[bytes] = []
    size = 0
    async for chunk in timed(request.stream(), limits_of(request)):
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
