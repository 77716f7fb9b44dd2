"""The glue between Starlette and our handlers.

Handlers are plain synchronous functions taking a `Call` (the parsed request, with the
operation's request model filled in as ``args``) and returning a JSON-able dict, or a
Response. They run in a worker thread, because Lance calls block.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio.to_thread
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nsframe._protocol.ids import join_id
from nsframe._protocol.routes import CONTEXT_HEADER_PREFIX, LEGACY_CONTEXT_HEADER_PREFIX
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.ids import check_body_id, get_delimiter, parse_id
from nsframe.server._http.request import read_body
from nsframe.server._http.validation import Envelope, decode
from nsframe.server._storage.catalog import Catalog

A = TypeVar("A", bound=Envelope)
# Set in the scope by the embedded client's in-process transport (nsframe._client.inprocess).
IN_PROCESS = "nsframe.in_process"
Handler = Callable[["Call[Any]"], Any]


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

    @property
    def label(self) -> str:
        return join_id(self.id, self.delimiter)


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
    for prefix in (LEGACY_CONTEXT_HEADER_PREFIX, CONTEXT_HEADER_PREFIX):
        for name, value in request.headers.items():
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


def endpoint(handler: Handler, model: type[Envelope], *, json_body: bool = True,
             has_id: bool = True, in_thread: bool = True
             ) -> Callable[[Request], Awaitable[Response]]:
    """Wrap ``handler`` as a Starlette endpoint whose request fills ``model``.

    ``json_body=False`` leaves the body unread (Arrow streams are read by the handler):
    the model is filled from the query string alone.
    """

    async def run(request: Request) -> Response:
        check_utf8_path(request)
        delimiter = get_delimiter(request.query_params)
        ident = parse_id(request.path_params["id"], delimiter) if has_id else []
        raw = await read_body(request) if json_body else b""
        args = decode(model, raw, request.query_params)
        check_body_id(args.id, ident, delimiter)
        call = Call(
            request=request,
            catalog=catalog_for(request),
            delimiter=delimiter,
            id=ident,
            args=args,
            context=request_context(request, args.context),
        )
        request.scope["nsframe.context"] = call.context
        # A JSON request from the embedded client (nsframe._client.inprocess) runs on the
        # client's own thread and event loop, which nothing else waits on: no hop.
        inline = not in_thread or (json_body and request.scope.get(IN_PROCESS, False))
        result = handler(call) if inline else await anyio.to_thread.run_sync(handler, call)
        if isinstance(result, Response):
            return result
        return JSONResponse(result)

    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


