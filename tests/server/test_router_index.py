"""`IndexedRouter` picks exactly the route Starlette's own loop would, for every route
template and method, and leaves every other request to that loop."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.routing import BaseRoute, Match, Router

from nsframe.server._http.metrics import metrics_route
from nsframe.server._http.routing import IndexedRouter
from nsframe.server._routes import ROUTES

ROUTER = IndexedRouter([*ROUTES, metrics_route()])


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "",
            "raw_path": path.encode(), "query_string": b"", "headers": []}


def _starlettes_choice(router: Router, scope: dict[str, Any]) -> BaseRoute | None:
    for route in router.routes:
        if route.matches(scope)[0] is Match.FULL:
            return route
    return None


def _indexed_choice(scope: dict[str, Any]) -> BaseRoute | None:
    segment = scope["path"].rsplit("/", 1)[-1]
    for route in ROUTER._by_segment.get(segment, ROUTER._any):
        if route.matches(scope)[0] is Match.FULL:
            return route
    return None


PATHS = sorted({
    getattr(route, "template", getattr(route, "path", "")).replace("{id}", ident)
    .replace("{", "").replace("}", "")
    for route in ROUTER.routes
    for ident in ("ns$t", "a", "x$y$query")
} | {"/v1/table/t/version/create", "/v1/table", "/nope", "/v1/table/t/list", "/"})


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
@pytest.mark.parametrize("path", PATHS)
def test_the_index_picks_starlettes_route(method: str, path: str) -> None:
    scope = _scope(method, path)
    assert _indexed_choice(scope) is _starlettes_choice(ROUTER, scope)


def test_every_route_is_a_candidate_for_its_own_paths() -> None:
    filed = {id(r) for routes in ROUTER._by_segment.values() for r in routes}
    filed |= {id(r) for r in ROUTER._any}
    assert filed == {id(r) for r in ROUTER.routes}
    assert ROUTER._by_segment["query"], "the query route is filed by its segment"
