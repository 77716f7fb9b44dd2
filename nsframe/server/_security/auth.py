"""Credentials, database selection, scopes and declared body sizes, before any route runs.

A pure ASGI middleware, so streamed Arrow bodies pass untouched. The credential comes
from the ``x-api-key`` header, then ``Authorization: Bearer``; only when neither header
is sent is a JSON body read for ``identity.api_key`` / ``identity.auth_token`` (it is
buffered and replayed to the handler). That read is bounded by
`Limits.max_identity_body_bytes` (64 KiB), far below the JSON limit, and by the body
timeouts: a client without credentials cannot make the server hold more, or wait
longer. A larger body without a credential header is a 401 before any of it is read.
Order of checks: 401 (credentials), 403 (scope), 404 (database), 413 (declared
Content-Length). The identifiers a request's members name (a rename's target) are
checked against the same scope by `endpoint` once the model is decoded (`_http.names`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe._protocol import routes
from nsframe.exceptions import APIError, PayloadTooLargeError
from nsframe.server._config import ServerConfig
from nsframe.server._http.errors import error_response
from nsframe.server._http.metrics import METRICS_PATH
from nsframe.server._http.names import GATE
from nsframe.server._http.request import timed
from nsframe.server._http.routing import ApiRoute
from nsframe.server._security import databases as _databases
from nsframe.server._security.access_log import AccessLog
from nsframe.server._security.browser import BrowserGuard, HostPolicy
from nsframe.server._security.credentials import Credentials, Principal, unauthorized
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


async def _body_chunks(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def _body_too_large_for_identity(limit: int) -> APIError:
    return unauthorized(
        "This server needs credentials: send an API key in the x-api-key header, or a "
        "token as 'Authorization: Bearer <token>'. A body without those headers is read "
        f"for identity.api_key only up to {limit} bytes (max_identity_body_bytes), and "
        "this one is larger."
    )


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
        if self.config.metrics and scope["path"] == METRICS_PATH:
            await self._metrics(scope, headers, receive, send)
            return
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
                # The names the request's members hold are checked once its model is
                # decoded (`_http.names`, in `endpoint`).
                scope[GATE] = principal.scope
            scope["nsframe.catalog"] = _databases.resolve(self.catalogs, name, source)
            self._check_declared_size(headers)
        except APIError as error:
            await error_response(Request(scope), error)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _metrics(self, scope: Scope, headers: Headers, receive: Receive,
                       send: Send) -> None:
        """A scrape: open by default; with ``metrics_require_auth``, any credential of
        the server's may scrape, whatever its scope (none names a database or table)."""
        if self.config.metrics_require_auth:
            api_key = headers.get(routes.API_KEY_HEADER, "").strip() or None
            try:
                principal = self.credentials.authenticate(api_key, _bearer(headers))
            except APIError as error:
                await error_response(Request(scope), error)(scope, receive, send)
                return
            scope["nsframe.principal"] = principal.name
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
        limit = min(self.config.limits.max_identity_body_bytes, self.config.max_json_bytes)
        declared = _declared_length(headers)
        if declared is not None and declared > self.config.max_json_bytes:
            raise _too_large("JSON", declared, self.config.max_json_bytes)
        if declared is not None and declared > limit:
            raise _body_too_large_for_identity(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in timed(_body_chunks(receive), self.config.limits):
            size += len(chunk)
            if size > self.config.max_json_bytes:
                raise _too_large("JSON", None, self.config.max_json_bytes)
            if size > limit:
                raise _body_too_large_for_identity(limit)
            chunks.append(chunk)
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


class _IdentityBody(msgspec.Struct):
    """The one member of a body this layer reads; the rest is skipped unparsed."""

    identity: dict[str, Any] | None = None


def _identity_of(body: bytes) -> dict[str, str]:
    # msgspec, not json: it skips the members it does not need without building them,
    # bounds nesting (RecursionError, not a crash) and has no limit on integer digits.
    try:
        parsed = msgspec.json.decode(body, type=_IdentityBody) if body.strip() else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return {}  # the handler reports a malformed body once the request is authenticated
    identity = parsed.identity if parsed is not None else None
    if identity is None:
        return {}
    return {k: v.strip() for k in ("api_key", "auth_token")
            if isinstance(v := identity.get(k), str) and v.strip()}


def wrap(app: ASGIApp, config: ServerConfig) -> ASGIApp:
    """``app`` behind the access log, the browser checks and the credential check."""
    assert isinstance(app, Starlette)
    routes = [r for r in app.routes if isinstance(r, ApiRoute)]
    policy = HostPolicy(config.allow_hosts, config.allow_origins)
    return AccessLog(BrowserGuard(AuthMiddleware(app, config, app.state.catalogs, routes),
                                  policy))
