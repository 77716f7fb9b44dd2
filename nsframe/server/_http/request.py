"""Reading request input: the JSON body's bytes, and SQL conditions made whole.

Members are checked by the operation's request model (`validation`), not here.
"""

from __future__ import annotations

from starlette.requests import Request

from nsframe._protocol.sql import closes_unopened
from nsframe.exceptions import InvalidInputError, PayloadTooLargeError

DEFAULT_JSON_LIMIT = 16 * 1024 * 1024


async def read_body(request: Request, *, limit: int | None = None) -> bytes:
    """The JSON body of ``request`` as bytes, refused above the server's size limit.

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
    async for chunk in request.stream():
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
