"""The access log: one line per request on logger ``nsframe.server.access``.

It records method, path (never the query string), status, duration, database, the
credential's *name*, the request's id and its context entries. Context entries whose key looks
like a secret are redacted; credentials themselves never reach this module.

The path is the client's (percent-decoded) text: a ``%0a`` in it would start a new line
that reads like another request. Every character that is not printable is therefore
written as an escape (``\n``, ``\x1b``, ``\u2028``), so one request is always one line.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe.server._http.handler import header_context
from nsframe.server._http.request_ids import request_id_of
from nsframe.server._logs import printable

__all__ = ["AccessLog", "printable", "safe_context"]

log = logging.getLogger("nsframe.server.access")

_SECRET_KEY = re.compile(r"auth|token|secret|passw|api.?key|credential|cookie|session", re.I)


def safe_context(context: dict[str, str]) -> dict[str, str]:
    return {k: "<redacted>" if _SECRET_KEY.search(k) else v for k, v in context.items()}


class AccessLog:
    """ASGI middleware that logs each HTTP request as its response completes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        logged = False

        def log_once() -> None:
            nonlocal logged
            if not logged:
                logged = True
                self._log(scope, status, (time.perf_counter() - started) * 1000)

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                log_once()  # before the last byte leaves, so the line precedes the answer
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            log_once()

    @staticmethod
    def _log(scope: Scope, status: int, duration_ms: float) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        context = scope.get("nsframe.context")
        if context is None:
            context = header_context(Headers(scope=scope))
        fields: dict[str, Any] = {
            "method": printable(scope["method"]),
            "path": printable(scope["path"]),
            "status": status,
            "duration_ms": round(duration_ms, 2),
            "database": printable(scope.get("nsframe.database") or "-"),
            "principal": printable(scope.get("nsframe.principal") or "-"),
            "request_id": request_id_of(scope),
            # A dict's repr escapes what is not printable in its keys and values.
            "context": safe_context(context),
        }
        log.info(
            "%s %s %d %.1fms db=%s by=%s context=%s",
            fields["method"], fields["path"], status, duration_ms, fields["database"],
            fields["principal"], fields["context"], extra={"nsframe": fields},
        )
