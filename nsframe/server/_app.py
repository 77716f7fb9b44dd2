"""The ASGI application: routes of every module, error handlers, middleware."""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from nsframe.exceptions import ERROR_TYPES, APIError
from nsframe.server import _logs
from nsframe.server._config import ServerConfig
from nsframe.server._http import dialect
from nsframe.server._http.capacity import Capacity
from nsframe.server._http.errors import error_response, handle_api_error, handle_unexpected
from nsframe.server._http.guard import ErrorGuard
from nsframe.server._http.metrics import RequestMetrics, metrics_route
from nsframe.server._http.request_ids import RequestIds
from nsframe.server._http.routing import IndexedRouter
from nsframe.server._http.transactions import TransactionLog
from nsframe.server._lifecycle import Lifecycle, LifecycleApp
from nsframe.server._routes import ROUTES
from nsframe.server._security import auth as _auth
from nsframe.server._security.scopes import classify
from nsframe.server._storage import freshness, redact
from nsframe.server._storage.catalog import Catalog
from nsframe.server._storage.location import overlapping_roots
from nsframe.server._storage.startup import StartupCollection


class StripTrailingSlash:
    """LanceDB clients end every path with '/': route `/v1/x/` as `/v1/x`, noting the
    request's dialect first (`_http.dialect`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if len(path) > 1 and path.endswith("/"):
                scope = dict(scope)
                dialect.mark(scope, had_trailing_slash=True)
                scope["path"] = path.rstrip("/") or "/"
                raw = scope.get("raw_path")
                if raw:
                    scope["raw_path"] = raw.rstrip(b"/") or b"/"
        await self.app(scope, receive, send)


class FreshWrites:
    """With a read consistency interval, marks each write request so that it resolves the
    catalog and the table afresh (`freshness`): the interval only ever applies to reads."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            operation = classify(ROUTES, scope)
            if operation is None or operation.write:
                freshness.mark_writing()
        await self.app(scope, receive, send)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}."
    elif exc.status_code == 404:
        detail = f"There is no operation at {request.url.path}: check the path against the API."
    else:
        detail = str(exc.detail)
    # Statuses the contract does not list (405) get a type and title of their own, not
    # the 500 defaults; the router's headers stay (a 405 must carry `Allow`).
    phrase = HTTPStatus(exc.status_code).phrase
    type_, title = ERROR_TYPES.get(
        exc.status_code, ("/errors/" + phrase.lower().replace(" ", "-"), phrase)
    )
    # No such route or method is an operation this server does not have: code 0,
    # Unsupported, which upstream clients raise as such.
    error = APIError(detail, status=exc.status_code, code=0 if exc.status_code in (404, 405)
                     else 13,
                     type=type_, title=title, headers=dict(exc.headers or {}))
    return error_response(request, error)


def create_app(
    root: str | os.PathLike[str] | None = None, *, config: ServerConfig | None = None,
    collect_garbage: bool = True, **options: Any,
) -> LifecycleApp:
    """The REST service over Lance datasets under ``root``.

    Pass either ``root`` (plus `ServerConfig` fields as keyword options) or a ready
    ``config``. ``collect_garbage`` collects what crashed servers left, beside serving
    (`_storage.startup`); the workers of `nsframe serve` leave it to their parent. The
    end of the app's ASGI lifespan (or ``app.lifecycle.close()``) closes its catalogs and
    stops their threads (the collection first).
    """
    if config is None:
        config = ServerConfig.build(root, **options)
    return _build(config, collect=collect_garbage)


def check_config(config: ServerConfig) -> StartupCollection:
    """Refuse what `create_app` would refuse (a bad credential setting, roots that
    overlap, a store that ignores conditional writes, a bucket that is not there), and
    start collecting what a crashed server left: the supervising parent of `nsframe
    serve` does this once, and each worker builds its own app. The collection runs in a
    thread and closes its catalogs when done; `StartupCollection.stop` ends it sooner."""
    catalogs = _build(config, collect=False).lifecycle.catalogs.values()
    return StartupCollection(list(catalogs), close_when_done=True).start()


def _build(config: ServerConfig, *, collect: bool) -> LifecycleApp:
    _check_metrics(config)
    app = Starlette(
        routes=[*ROUTES, *([metrics_route()] if config.metrics else [])],
        exception_handlers={
            APIError: handle_api_error,
            HTTPException: handle_http_exception,
            Exception: handle_unexpected,
        },
    )
    app.router = IndexedRouter(app.router.routes)  # before the first request builds the stack
    app.state.config = config
    # A store's or Lance's message could quote a credential: never in a log line.
    redact.install("nsframe", "nsframe.server", "uvicorn.error")
    # Every line logged for a request names it, whoever prints the records.
    _logs.install()
    _check_roots(config)
    app.state.catalogs = {}
    lifecycle = Lifecycle(app.state.catalogs)
    try:
        app.state.catalogs[""] = _catalog(config, config.root)
        for name, path in config.databases.items():
            app.state.catalogs[name] = _catalog(config, path)
    except BaseException:
        lifecycle.close()  # the catalogs made so far: no lease thread outlives a refusal
        raise
    if collect:
        # What a crashed server left (its writes' files, half-dropped namespaces), in
        # the background: a root of many tables takes minutes (`_storage.startup`).
        StartupCollection(list(app.state.catalogs.values())).start()
    app.state.transactions = TransactionLog()
    app.state.max_json_bytes = config.max_json_bytes
    app.state.max_arrow_bytes = config.max_arrow_bytes
    app.state.capacity = Capacity(config.limits, gauges=config.metrics)
    wrapped = _auth.wrap(app, config)
    if config.metrics:
        # Outside the credential check, so that its 401s and 403s are counted too.
        wrapped = RequestMetrics(wrapped, app.routes, table_labels=config.metrics_table_labels)
    if config.read_consistency_interval > 0:
        wrapped = FreshWrites(wrapped)
    # ErrorGuard around every layer that may raise: no exception reaches uvicorn, which
    # would close the connection (see `_http.guard`); around it, every answer and log
    # line, the guard's included, gets the request id (`_http.request_ids`). The probes
    # come before all of them (no credential, no Host check, no capacity lane:
    # `_lifecycle`).
    return LifecycleApp(RequestIds(ErrorGuard(StripTrailingSlash(wrapped))), lifecycle)


def _check_metrics(config: ServerConfig) -> None:
    if config.metrics_require_auth and not (config.api_keys or config.tokens or config.jwt):
        raise ValueError("metrics_require_auth needs credentials that may scrape /metrics: "
                         "configure api_keys, tokens or jwt, or leave it off.")


def _check_roots(config: ServerConfig) -> None:
    # One root per database, none inside another: a database inside another's root
    # could be read, and collected as garbage, through the outer one.
    shared = overlapping_roots({"": config.root, **config.databases})
    if shared is not None:
        raise ValueError(shared)


def _catalog(config: ServerConfig, root: str | os.PathLike[str]) -> Catalog:
    return Catalog(root, storage_options=config.storage_options,
                   check_store=config.check_conditional_put,
                   read_consistency_interval=config.read_consistency_interval,
                   vend_storage_options=config.vend_storage_options)
