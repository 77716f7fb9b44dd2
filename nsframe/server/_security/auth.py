"""Credentials, database selection, scopes and declared body sizes, before any route runs.

A pure ASGI middleware, so streamed Arrow bodies pass untouched. The credential comes
from the ``x-api-key`` header, then ``Authorization: Bearer``; only when neither header
is sent is a JSON body read for ``identity.api_key`` / ``identity.auth_token`` (it is
buffered under the JSON size limit and replayed to the handler). Order of checks: 401
(credentials), 403 (scope), 404 (database), 413 (declared Content-Length).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe._protocol import routes
from nsframe.exceptions import APIError, PayloadTooLargeError
from nsframe.server._config import ServerConfig
from nsframe.server._http.errors import error_response
from nsframe.server._http.routing import ApiRoute
from nsframe.server._security import databases as _databases
from nsframe.server._security.access_log import AccessLog
from nsframe.server._security.credentials import Credentials, Principal
from nsframe.server._security.scopes import classify
from nsframe.server._storage.catalog import Catalog

ARROW_TYPES = ("arrow", "octet-stream")


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _declared_length(headers: Headers) -> int | None:
    raw = headers.get("content-length")
    return int(raw) if raw and raw.isdigit() else None


def _too_large(what: str, size: int | None, limit: int) -> PayloadTooLargeError:
    shown = f"{size} bytes" if size is not None else f"larger than {limit} bytes"
    return PayloadTooLargeError(
        f"The {what} body is {shown}; this server accepts at most {limit} bytes"
        + (": send the data in several requests." if what == "Arrow" else ".")
    )


class AuthMiddleware:
    """Authenticates, picks the database and checks the scope of every HTTP request."""

    def __init__(self, app: ASGIApp, config: ServerConfig, catalogs: dict[str, Catalog],
                 routes: Sequence[ApiRoute]) -> None:
        self.app = app
        self.routes = routes
        self.config = config
        self.catalogs = catalogs
        self.credentials = Credentials(config)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.credentials.required:
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            principal, receive = await self._authenticate(scope, headers, receive)
            scope["nsframe.principal"] = principal.name
            name, source = _databases.database_name(
                headers, self.config.database_from_host, self.catalogs
            )
            scope["nsframe.database"] = name
            if principal.scope.limited:
                op = classify(self.routes, scope)
                if op is not None:
                    principal.scope.check(op, name)
            scope["nsframe.catalog"] = _databases.resolve(self.catalogs, name, source)
            self._check_declared_size(headers)
        except APIError as error:
            await error_response(Request(scope), error)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _authenticate(
        self, scope: Scope, headers: Headers, receive: Receive
    ) -> tuple[Principal, Receive]:
        api_key = headers.get(routes.API_KEY_HEADER, "").strip() or None
        bearer = _bearer(headers)
        if self.credentials.required and api_key is None and bearer is None:
            identity, receive = await self._body_identity(scope, headers, receive)
            api_key, bearer = identity.get("api_key"), identity.get("auth_token")
        return self.credentials.authenticate(api_key, bearer), receive

    async def _body_identity(
        self, scope: Scope, headers: Headers, receive: Receive
    ) -> tuple[dict[str, str], Receive]:
        """``identity`` of a JSON body, and a ``receive`` that replays the body."""
        content_type = headers.get("content-type", "").lower()
        if scope["method"] in ("GET", "HEAD") or (content_type and "json" not in content_type):
            return {}, receive
        limit = self.config.max_json_bytes
        declared = _declared_length(headers)
        if declared is not None and declared > limit:
            raise _too_large("JSON", declared, limit)
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large("JSON", None, limit)
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return _identity_of(body), replay

    def _check_declared_size(self, headers: Headers) -> None:
        declared = _declared_length(headers)
        if declared is None:
            return  # chunked bodies are counted while they are read
        content_type = headers.get("content-type", "").lower()
        if any(t in content_type for t in ARROW_TYPES):
            if declared > self.config.max_arrow_bytes:
                raise _too_large("Arrow", declared, self.config.max_arrow_bytes)
        elif "json" in content_type and declared > self.config.max_json_bytes:
            raise _too_large("JSON", declared, self.config.max_json_bytes)


def _identity_of(body: bytes) -> dict[str, str]:
    try:
        parsed: Any = json.loads(body) if body.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return {}  # the handler reports malformed JSON once the request is authenticated
    identity = parsed.get("identity") if isinstance(parsed, dict) else None
    if not isinstance(identity, dict):
        return {}
    return {k: v.strip() for k in ("api_key", "auth_token")
            if isinstance(v := identity.get(k), str) and v.strip()}


def wrap(app: ASGIApp, config: ServerConfig) -> ASGIApp:
    """``app`` behind the access log and the credential check."""
    assert isinstance(app, Starlette)
    routes = [r for r in app.routes if isinstance(r, ApiRoute)]
    return AccessLog(AuthMiddleware(app, config, app.state.catalogs, routes))
