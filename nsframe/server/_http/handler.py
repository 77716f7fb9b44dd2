"""The glue between Starlette and our handlers.

Handlers are plain synchronous functions taking a `Call` (the parsed request, with the
operation's request model filled in as ``args``) and returning a JSON-able dict, or a
Response. They run in a worker thread of their route's lane (`capacity`), because Lance
calls block. Everything a hostile client could use to hold a thread happens before: the
media type is checked, the JSON body read under its timeouts, the model decoded and its
limits checked, all on the event loop. The embedded client's own in-process calls
(`nsframe._client.inprocess`) skip the lanes: a JSON handler runs on the calling thread.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
import anyio.to_thread
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nsframe._protocol.ids import join_id
from nsframe._protocol.routes import CONTEXT_HEADER_PREFIX, LEGACY_CONTEXT_HEADER_PREFIX
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.capacity import Capacity, HeldResponse, Weight, Work, clients_of
from nsframe.server._http.expressions import check_expressions
from nsframe.server._http.ids import check_body_id, get_delimiter, parse_id
from nsframe.server._http.media import Body, check_media_type
from nsframe.server._http.names import GATE, Gate, touched
from nsframe.server._http.request import in_process, limits_of, read_body
from nsframe.server._http.validation import Envelope, decode
from nsframe.server._limits import Limits
from nsframe.server._storage.catalog import Catalog

A = TypeVar("A", bound=Envelope)
Handler = Callable[["Call[Any]"], Any]
# Raises the 404 of a request's missing namespace or table (`ApiRoute` picks which).
AbsentCheck = Callable[[Catalog, list[str]], object]


class AnythingConvertor(PathConvertor):
    """Like Starlette's ``path``, but also matches newlines, so that a name holding one
    reaches `check_name` (a 400 that says why) instead of the router's 404."""

    regex = "(?s:.*)"


register_url_convertor("anything", AnythingConvertor())


@dataclass
class Call(Generic[A]):
    """One request, parsed: what every handler needs. ``args`` is the operation's request
    model, checked whole before the handler runs."""

    request: Request
    catalog: Catalog
    delimiter: str
    id: list[str]
    args: A
    context: dict[str, str] = field(default_factory=dict)
    # The deadline of the work and whether its client is still there (`Work.check`).
    work: Work = field(default_factory=lambda: Work(Limits().query_timeout))

    @property
    def label(self) -> str:
        return join_id(self.id, self.delimiter)

    @property
    def limits(self) -> Limits:
        return limits_of(self.request)


def catalog_for(request: Request) -> Catalog:
    """The catalog of the database this request addresses (see `_auth`)."""
    catalog = request.scope.get("nsframe.catalog")
    if catalog is None:
        catalog = request.app.state.catalogs[""]
    assert isinstance(catalog, Catalog)
    return catalog


def request_context(request: Request, sent: dict[str, Any] | None) -> dict[str, str]:
    """`context` entries: body first, then `x-lance-ctx-*`, then `x-service-ctx-*` headers."""
    context: dict[str, str] = {}
    if sent:
        context.update({str(k): str(v) for k, v in sent.items()})
    context.update(header_context(request.headers))
    return context


def header_context(headers: Mapping[str, str]) -> dict[str, str]:
    """Context entries from headers alone (also for requests refused before their
    handler: the access log): `x-lance-ctx-*`, then `x-service-ctx-*`, which wins."""
    context: dict[str, str] = {}
    for prefix in (LEGACY_CONTEXT_HEADER_PREFIX, CONTEXT_HEADER_PREFIX):
        for name, value in headers.items():
            if name.startswith(prefix) and len(name) > len(prefix):
                context[name[len(prefix):]] = value
    return context


def check_utf8_path(request: Request) -> None:
    """400 for a path that is not UTF-8 once percent-decoded.

    The server decodes such bytes as U+FFFD, so `a%FF` and `a%FE` would both name the
    object `a\ufffd`.
    """
    raw = request.scope.get("raw_path")
    if not raw:
        return
    try:
        urllib.parse.unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            "The request path is not valid UTF-8 once percent-decoded: encode names as UTF-8."
        ) from exc


def capacity_of(request: Request) -> Capacity:
    capacity = getattr(request.app.state, "capacity", None)
    if capacity is None:
        capacity = request.app.state.capacity = Capacity(limits_of(request))
    assert isinstance(capacity, Capacity)
    return capacity


async def _watch_disconnect(request: Request, work: Work) -> None:
    """Tell ``work`` when the client hangs up (only once the body was read whole)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            work.client_gone()
            return


async def _in_lane(handler: Handler, call: Call[Any], watch: bool) -> Any:
    lane = call.work.lane
    assert lane is not None
    if not watch:
        return await anyio.to_thread.run_sync(handler, call, limiter=lane.threads)
    # A plain task, not a task group: the handler's own exception must leave as it is,
    # not wrapped in an ExceptionGroup.
    watcher = asyncio.ensure_future(_watch_disconnect(call.request, call.work))
    try:
        return await anyio.to_thread.run_sync(handler, call, limiter=lane.threads)
    finally:
        # The response, streamed or not, listens for the disconnect itself from here on.
        watcher.cancel()


def _as_response(result: Any) -> Response:
    """A handler's answer: a Response as it is, anything else as JSON."""
    return result if isinstance(result, Response) else JSONResponse(result)


async def _missing_first(absent: AbsentCheck | None, request: Request,
                         ident: list[str]) -> None:
    """The 404 of a missing namespace or table, before an invalid request's 400.

    The lookup reads the store: in a worker thread, never on the event loop.
    """
    if absent is not None and ident:
        await anyio.to_thread.run_sync(absent, catalog_for(request), ident)


def endpoint(handler: Handler, model: type[Envelope], *, write: bool = True,
             json_body: bool = True, has_id: bool = True, in_thread: bool = True,
             weight: Weight = "light", body: Body | None = None,
             absent: AbsentCheck | None = None) -> Callable[[Request], Awaitable[Response]]:
    """Wrap ``handler`` as a Starlette endpoint whose request fills ``model``.

    ``json_body=False`` leaves the body unread (Arrow streams are read by the handler):
    the model is filled from the query string alone. ``body`` is the media type the
    route takes (`media.Body`); by default JSON when ``json_body``, else Arrow.
    ``weight`` picks the lane of worker threads the handler runs in (`capacity`).
    ``write``: the route's access, which the names the model's members hold need too
    (`_http.names`), unless their marker says otherwise.
    ``absent`` answers first when a request that is also invalid names a namespace or
    table that does not exist: a 404, as the reference server answers, not the 400.
    """
    kind: Body = body or ("json" if json_body else "arrow")

    async def run(request: Request) -> Response:
        check_utf8_path(request)
        delimiter = get_delimiter(request.query_params)
        ident = parse_id(request.path_params["id"], delimiter) if has_id else []
        check_media_type(request, kind)
        raw = await read_body(request) if json_body else b""
        limits = limits_of(request)
        try:
            args = decode(model, raw, request.query_params)
        except InvalidInputError:
            await _missing_first(absent, request, ident)
            raise
        gate: Gate | None = request.scope.get(GATE)
        if gate is not None:  # a limited credential: every name the members hold
            for touch in touched(args, ident, write, delimiter):
                gate.allow(touch, delimiter)
        # Every SQL expression is measured before Lance parses it (`expressions`); an
        # expression too big is refused at once, with no lookup of its table.
        check_expressions(args, limits)
        try:
            args.check_limits(limits)
            check_body_id(args.id, ident, delimiter)
        except InvalidInputError:
            await _missing_first(absent, request, ident)
            raise
        # The lanes share one server among remote clients; the embedded client's own
        # threads, in process, are not queued behind them (their loops are their own).
        local = in_process(request)
        lane = None if local else capacity_of(request).lane(weight)
        call = Call(
            request=request,
            catalog=catalog_for(request),
            delimiter=delimiter,
            id=ident,
            args=args,
            context=request_context(request, args.context),
            work=Work(limits.query_timeout, lane),
        )
        request.scope["nsframe.context"] = call.context
        if not in_thread or (local and json_body):
            # A JSON request from the embedded client (nsframe._client.inprocess) runs on
            # the caller's own thread and event loop, which nothing else waits on.
            return _as_response(handler(call))
        if lane is None:
            # In process with an Arrow body: pulled from the caller's iterator by a worker
            # thread of the caller's loop while Lance writes.
            return _as_response(await anyio.to_thread.run_sync(handler, call))
        # The slot is held until the answer is sent, a streamed one included.
        release = await lane.admit(clients_of(request.scope))
        try:
            # A heavy handler stops when its client hangs up; the JSON body has been
            # read whole by then, so the watcher is the only one receiving.
            result = await _in_lane(handler, call, watch=json_body and weight == "heavy")
        except BaseException:
            release()
            raise
        return HeldResponse(_as_response(result), release)

    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


