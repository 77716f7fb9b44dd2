"""Request metrics and the ``GET /metrics`` answer (Prometheus text format).

`RequestMetrics` is a thin ASGI middleware around the whole service: it counts every
HTTP request by route and status when its answer is complete, observes its latency and
keeps the in-flight gauge. The route label is the operation's name (``QueryTable``), read
from the route that answered; a request refused before routing (401, 403, 413) is
matched against the route table once, and one that no route answers is ``unmatched``:
never a raw path, so the number of series is bounded by the route table.

The counters are process-wide, as prometheus_client keeps them. Under ``nsframe serve``
every worker writes them to the supervisor's ``PROMETHEUS_MULTIPROC_DIR`` and `exposition`
adds up the files of all workers, so one scrape of any worker shows the whole server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe._protocol.ids import join_id, split_id

METRICS_PATH = "/metrics"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "unmatched"
# From a describe on a warm cache (about 1 ms) to a long scan or upload.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0, float("inf"))

REQUESTS = Counter(
    "nsframe_http_requests",
    "HTTP requests answered, by route (the operation's name) and status code.",
    ["route", "status"],
)
LATENCY = Histogram(
    "nsframe_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer (streamed results included), "
    "by route.",
    ["route"],
    buckets=LATENCY_BUCKETS,
)
IN_FLIGHT = Gauge(
    "nsframe_http_requests_in_flight",
    "HTTP requests being answered now.",
    multiprocess_mode="livesum",
)
TABLE_REQUESTS = Counter(
    "nsframe_table_requests",
    "Requests on one table that succeeded (status below 400), by table, route and status; "
    "only with metrics_table_labels.",
    ["table", "route", "status"],
)
LANE_SLOTS = Gauge(
    "nsframe_lane_slots",
    "Slots of each capacity lane (light, heavy, upload): its limit.",
    ["lane"],
    multiprocess_mode="livesum",
)
LANE_IN_USE = Gauge(
    "nsframe_lane_slots_in_use",
    "Slots of each capacity lane held by a request now.",
    ["lane"],
    multiprocess_mode="livesum",
)
LANE_WAITING = Gauge(
    "nsframe_lane_queue_requests",
    "Requests waiting for a slot of each capacity lane now (503 after queue_timeout).",
    ["lane"],
    multiprocess_mode="livesum",
)


def route_label(route: BaseRoute) -> str:
    """``QueryTable`` for the route of handler ``query_table``; ``Metrics`` for /metrics."""
    name = getattr(route, "operation", None) or getattr(route, "name", None) or UNMATCHED
    return "".join(part.capitalize() for part in str(name).split("_"))


class RequestMetrics:
    """Counts each HTTP request by route and status, with its latency; ``table_labels``
    also counts successful table requests by table name."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute], *,
                 table_labels: bool = False) -> None:
        self.app = app
        self.routes = list(routes)
        self.labels = {id(r): route_label(r) for r in self.routes}
        self.table_labels = table_labels
        # Bound children by (route, status) and route: ``labels()`` locks on every call.
        self._counts: dict[tuple[str, int], Counter] = {}
        self._latency: dict[str, Histogram] = {}
        self._in_flight = IN_FLIGHT

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == METRICS_PATH:
            # Scrapes are not counted: they would count themselves, in flight too.
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception that escapes is answered 500 (`_http.guard`)

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self._in_flight.inc()
        try:
            await self.app(scope, receive, record_status)
        finally:
            self._in_flight.dec()
            self._record(scope, status, time.perf_counter() - started)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        label = self.labels.get(id(route)) if route is not None else None
        if label is None:
            label = self._match(scope)
        count = self._counts.get((label, status))
        if count is None:
            count = self._counts[(label, status)] = REQUESTS.labels(label, str(status))
        count.inc()
        latency = self._latency.get(label)
        if latency is None:
            latency = self._latency[label] = LATENCY.labels(label)
        latency.observe(seconds)
        if self.table_labels and status < 400 and route is not None:
            table = _table(scope)
            if table is not None:
                TABLE_REQUESTS.labels(table, label, str(status)).inc()

    def _match(self, scope: Scope) -> str:
        """The route of a request answered before routing (a 401), or ``unmatched``."""
        for route in self.routes:
            if route.matches(scope)[0] is Match.FULL:
                return self.labels[id(route)]
        return UNMATCHED


def _table(scope: Scope) -> str | None:
    """The table a table route names, as ``ns$table``; None for other routes."""
    route = scope.get("route")
    template = getattr(route, "template", "")
    if not template.startswith("/v1/table/{id}"):
        return None
    raw = scope.get("path_params", {}).get("id")
    if not isinstance(raw, str):
        return None
    if b"delimiter" not in scope.get("query_string", b""):
        return raw
    delimiter = QueryParams(scope["query_string"].decode("latin-1")).get("delimiter")
    return join_id(split_id(raw, delimiter)) if delimiter else raw


def exposition() -> bytes:
    """Every metric in Prometheus text format, added up over the workers when a
    supervisor set `MULTIPROC_ENV`."""
    folder = os.environ.get(MULTIPROC_ENV)
    if not folder:
        from prometheus_client import REGISTRY

        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: runs in the app's default thread pool, outside the capacity
    lanes, so a scrape is answered while every lane is full."""
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)


def metrics_route() -> Route:
    return Route(METRICS_PATH, metrics_endpoint, methods=["GET"], name="metrics")
