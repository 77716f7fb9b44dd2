"""Request ids: each request gets one, its answer and its log lines carry it.

An ``x-request-id`` the client (or a load balancer in front) sent is kept when it is a
plausible id: 1 to 128 characters of ``A-Z a-z 0-9 . _ : ; = + / @ -``. Anything else
(a newline, a quote, a space, 10 kB) is replaced by a new id, never copied into a log
line. A request without one gets a new id (32 random hex digits). The answer, whatever
it is (an error, an unknown path, a refused credential, a 503, a streamed result), sends
the id back in ``x-request-id``; error bodies hold it as ``request_id`` (`errors`).
"""

from __future__ import annotations

import random
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe._protocol.routes import REQUEST_ID_HEADER
from nsframe.server import _logs

MAX_LENGTH = 128
_ACCEPTED = re.compile(rf"[A-Za-z0-9._:;=+/@-]{{1,{MAX_LENGTH}}}")
_HEADER = REQUEST_ID_HEADER.encode("latin-1")
# Where the request's id is kept in the ASGI scope.
SCOPE_KEY = "nsframe.request_id"


def accepted(value: str | None) -> str | None:
    """``value`` when it is an id we may log as it is, else None."""
    if value is None or _ACCEPTED.fullmatch(value) is None:
        return None
    return value


def new_id() -> str:
    """128 random bits in 32 hex digits, uuid4's size. Not `uuid.uuid4()`: it reads
    os.urandom per call, ten times the cost; an id needs to be unique, not secret, and
    `random` is seeded afresh in every process (forked ones included)."""
    return f"{random.getrandbits(128):032x}"


def request_id_of(scope: Scope) -> str | None:
    """The id of the request of ``scope`` (None outside `RequestIds`)."""
    found = scope.get(SCOPE_KEY)
    return found if isinstance(found, str) else _logs.current.get()


def _sent(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == _HEADER:  # ASGI servers send header names in lower case
            # Bytes beyond ASCII are refused by the pattern anyway.
            return bytes(value).decode("latin-1")
    return None


class RequestIds:
    """ASGI middleware, outermost: picks the request's id, sets it for the log lines of
    the request (`_logs.current`) and adds it to the answer's headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = scope.get(SCOPE_KEY)
        if not isinstance(request_id, str):
            request_id = accepted(_sent(scope)) or new_id()
            scope[SCOPE_KEY] = request_id
        header = (_HEADER, request_id.encode("latin-1"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                # ASGI header names are lower case; one the app set gives way to ours.
                headers = [(k, v) for k, v in message.get("headers") or () if k != _HEADER]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        token = _logs.current.set(request_id)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            _logs.current.reset(token)
