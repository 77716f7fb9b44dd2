"""The route table's building block: a route that declares what it does.

Each `ApiRoute` names its operation, whether it reads or writes, its request model and
its weight (which lane of worker threads runs it, `capacity`); the security layer reads
that declaration to authorize a request, so there is no second router, and `endpoint`
fills the model before the handler runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send

from nsframe._protocol import routes
from nsframe.server._http.capacity import Weight
from nsframe.server._http.handler import A, AbsentCheck, Call, endpoint
from nsframe.server._http.names import Access
from nsframe.server._http.validation import Envelope, prepare

# Table routes whose `{id}` names a table to be made: its namespace must exist.
NEW_TABLE_TEMPLATES = (routes.TABLE_CREATE, routes.TABLE_DECLARE, routes.TABLE_REGISTER)


class ApiRoute(Route):
    """A Starlette route for a `_protocol.routes` template, with its access declared.

    ``{id}`` matches any text, slashes too, so that a name holding an encoded slash
    reaches `check_name` (a 400 that says why). A literal slash is a path segment: a
    request whose raw path has more segments than the template is not this route, so
    `/v1/table/t/version/create` is the router's 404, not table ``t/version``'s create.
    """

    def __init__(self, template: str, handler: Callable[[Call[A]], Any], access: Access, *,
                 model: type[A] | None = None, methods: tuple[str, ...] = ("POST",),
                 namespaced: bool = True, weight: Weight = "light",
                 **options: Any) -> None:
        self.template = template
        self.access = access
        self.weight = weight
        self.operation = handler.__name__
        self.handler = handler
        # The members the operation takes; the envelope alone when it declares none.
        self.model: type[Envelope] = model or Envelope
        prepare(self.model)
        # Whether `{id}` is a namespace or table identifier (a transaction id is not).
        self.namespaced = namespaced
        # Whether the model's members come from a JSON body, or the query string alone.
        self.json_body: bool = options.get("json_body", True)
        self.segments = template.count("/")
        # What every path this route matches starts and ends with: a cheap test that
        # turns most routes away before their regular expression runs.
        self.starts = template.split("{", 1)[0]
        self.ends = template.rsplit("}", 1)[1] if "}" in template else ""
        path = template.replace("{id}", "{id:anything}")
        options.setdefault("absent", absent_check(template) if namespaced else None)
        super().__init__(path, endpoint(handler, self.model, write=access == "write",
                                        weight=weight, **options),
                         methods=list(methods), name=handler.__name__)

    @property
    def write(self) -> bool:
        return self.access == "write"

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not scope.get("root_path"):
            path: str = scope["path"]
            if not (path.startswith(self.starts) and path.endswith(self.ends)):
                return Match.NONE, {}
        match, child = super().matches(scope)
        if match is not Match.NONE and raw_segments(scope) != self.segments:
            return Match.NONE, {}
        return match, child


def absent_check(template: str) -> AbsentCheck | None:
    """What must exist for a request on ``template`` to be more than a 404: the table of a
    table route, the namespace of a new table's."""
    if not template.startswith("/v1/table/{id}/"):
        return None
    if template in NEW_TABLE_TEMPLATES:
        return lambda catalog, ident: catalog.require_namespace(ident[:-1])
    return lambda catalog, ident: catalog.require_table(ident, allow_declared=True)


def raw_segments(scope: Scope) -> int:
    """How many `/` the request path has before percent-decoding."""
    raw: bytes | None = scope.get("raw_path")
    if raw is None:
        return str(scope["path"]).count("/")
    return raw.split(b"?", 1)[0].count(b"/")


class IndexedRouter(Router):
    """Starlette's router, with the routes that may match a path found by its last
    segment (``query`` of `/v1/table/{id}/query`) instead of trying each in turn.

    Every route whose template ends in a fixed segment is filed under it; any other
    route is tried for every path. The candidates keep the route table's order, so the
    first full match is the one Starlette's own loop finds; a request that no candidate
    fully matches (a wrong method, a missing route) goes to that loop, which answers it
    as it always has. Measured in a query's cold cache: 17 route checks took ~50 µs.
    """

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        super().__init__(list(routes))
        # Each route's fixed last segment, by position (routes define __eq__, not hash).
        fixed: list[str | None] = []
        for route in self.routes:
            last = getattr(route, "template", "/{").rsplit("/", 1)[-1]
            fixed.append(None if "{" in last else last)
        self._any = [r for r, f in zip(self.routes, fixed, strict=True) if f is None]
        self._by_segment = {
            segment: [r for r, f in zip(self.routes, fixed, strict=True) if f in (None, segment)]
            for segment in {f for f in fixed if f is not None}
        }

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            segment = str(scope["path"]).rsplit("/", 1)[-1]
            for route in self._by_segment.get(segment, self._any):
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope.setdefault("router", self)
                    scope["route"] = route
                    scope.update(child)
                    await route.handle(scope, receive, send)
                    return
        await super().app(scope, receive, send)
