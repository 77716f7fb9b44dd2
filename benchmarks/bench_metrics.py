"""The cost of metrics per request: the server with metrics on against metrics off, same run.

Three measurements, the cases interleaved round by round (the order alternating) so that
drift hits both alike; per request, the server's CPU time (summed over the rounds) and the
median round's wall time, with their ratios on/off:

- ``in-process``: two apps over one root (``metrics=True`` and ``metrics=False``) called
  as ASGI apps in this process, no socket: the strictest ratio, since nothing else of a
  request's path dilutes the middleware's cost. Counters are in this process's memory.
- ``http``: two ``nsframe serve`` processes over one root (metrics on, ``--no-metrics``)
  through ``requests`` on loopback: the deployed path, where each worker writes its
  counters to memory-mapped files (prometheus_client's multiprocess mode).
- ``unit``: what metrics add to one request, without the request: `RequestMetrics`
  around an app that answers at once, against that app alone, plus a capacity lane's
  admission with gauges against one without; in memory and in multiprocess mode (a child
  process with ``PROMETHEUS_MULTIPROC_DIR``, as under ``nsframe serve``). The request
  figures above are too noisy on a shared machine to show a cost this small; this one is
  not, and dividing it by a request's time gives the share.

The operations: describe, count_rows and a small filtered query (k=10) of a 1,000-row
table. The storage counters (store requests, caches) count in both apps alike: they sit
in the storage layer, whatever the setting; ``primitives`` gives their unit cost.

    .venv/bin/python benchmarks/bench_metrics.py [--rounds 15] [--batch 40] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_seconds, median, print_table, serve_in_subprocess, write_results

from nsframe.server import create_app

TABLE = "bench$t"
OPERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "describe": (f"/v1/table/{TABLE}/describe", {}),
    "count_rows": (f"/v1/table/{TABLE}/count_rows", {}),
    "query k=10": (f"/v1/table/{TABLE}/query",
                   {"filter": "id < 500", "k": 10, "columns": ["id", "text"]}),
}



def make_table(root: Path) -> None:
    app = create_app(root, metrics=False)
    rows = pa.table({"id": pa.array(range(1000), pa.int64()),
                     "text": [f"row {i}" for i in range(1000)]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    body = sink.getvalue().to_pybytes()
    loop = asyncio.new_event_loop()
    try:
        for path, payload, kind in (("/v1/namespace/bench/create", b"{}", "json"),
                                    (f"/v1/table/{TABLE}/create", body, "arrow")):
            status = loop.run_until_complete(call(app, path, payload, kind))
            assert status == 200, (path, status)
    finally:
        loop.close()


async def call(app: Any, path: str, body: bytes, kind: str = "json") -> int:
    """One request to an ASGI app; its status (the answer is read and dropped)."""
    content_type = b"application/json" if kind == "json" else \
        b"application/vnd.apache.arrow.stream"
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path.replace("%24", "$"),
        "raw_path": path.replace("$", "%24").encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80),
    }
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)  # a client that stays connected
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


Case = tuple[Callable[[str], None], Callable[[], float]]  # a request; the server's CPU clock


def interleaved(cases: dict[str, Case], rounds: int,
                batch: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Seconds per request of each operation and case, wall and the server's CPU, one
    figure per round."""
    found: dict[str, dict[str, dict[str, list[float]]]] = {
        op: {c: {"wall": [], "cpu": []} for c in cases} for op in OPERATIONS}
    names = list(cases)
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        for op in OPERATIONS:
            for case in order:
                run, cpu = cases[case]
                run(op)  # warm: the first call after the other case's
                started, used = time.perf_counter(), cpu()
                for _ in range(batch):
                    run(op)
                found[op][case]["wall"].append((time.perf_counter() - started) / batch)
                found[op][case]["cpu"].append((cpu() - used) / batch)
    return found


def in_process(root: Path, rounds: int,
               batch: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    apps = {"on": create_app(root), "off": create_app(root, metrics=False)}
    loop = asyncio.new_event_loop()

    def runner(case: str) -> Callable[[str], None]:
        app = apps[case]

        def run(op: str) -> None:
            path, payload = OPERATIONS[op]
            status = loop.run_until_complete(call(app, path, json.dumps(payload).encode()))
            assert status == 200, (case, op, status)

        return run

    try:
        # CPU of this process: the handler's worker threads included.
        return interleaved({case: (runner(case), time.process_time) for case in apps},
                           rounds, batch)
    finally:
        loop.close()


def over_http(root: Path, rounds: int,
              batch: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    with serve_in_subprocess(root) as on, \
            serve_in_subprocess(root, args=["--no-metrics"]) as off:
        assert requests.get(f"{on.url}/metrics", timeout=30).status_code == 200
        assert requests.get(f"{off.url}/metrics", timeout=30).status_code == 404

        def runner(url: str) -> Callable[[str], None]:
            session = requests.Session()

            def run(op: str) -> None:
                path, payload = OPERATIONS[op]
                resp = session.post(url + path, json=payload, timeout=60)
                assert resp.status_code == 200, resp.text

            return run

        return interleaved({"on": (runner(on.url), lambda: cpu_seconds(on.pid)),
                            "off": (runner(off.url), lambda: cpu_seconds(off.pid))},
                           rounds, batch)


def unit_costs(rounds: int, number: int = 20_000) -> dict[str, float]:
    """Microseconds that metrics add per request (middleware) and per admission (lane),
    medians of ``rounds`` interleaved timings of ``number`` calls."""
    from nsframe.server._http.capacity import Lane
    from nsframe.server._http.metrics import RequestMetrics
    from nsframe.server._routes import ROUTES

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        scope["route"] = route
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    # As the router leaves it: the route that answered, whose operation is the label.
    route = next(r for r in ROUTES if r.operation == "query_table")
    counted = RequestMetrics(answer, ROUTES)
    scope = {"type": "http", "method": "POST", "path": "/v1/table/a$b/query",
             "raw_path": b"/v1/table/a%24b/query", "query_string": b"", "headers": []}
    lanes = {"on": Lane("heavy", 8, 60, gauges=True), "off": Lane("heavy", 8, 60)}

    async def nothing() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def drop(message: Any) -> None:
        pass

    # CPU time of this thread, not wall time: other processes on a busy machine then
    # barely move a cost of microseconds (all of it is this thread's work).
    async def requests_of(target: Any) -> float:
        started = time.thread_time()
        for _ in range(number):
            await target(dict(scope), nothing, drop)
        return (time.thread_time() - started) / number

    async def admissions(lane: Lane) -> float:
        started = time.thread_time()
        for _ in range(number):
            (await lane.admit())()
        return (time.thread_time() - started) / number

    async def measure() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {k: [] for k in ("mw on", "mw off", "lane on",
                                                         "lane off")}
        for number_ in range(rounds):
            pairs = [("mw on", counted), ("mw off", answer)]
            for name, target in pairs if number_ % 2 == 0 else pairs[::-1]:
                found[name].append(await requests_of(target))
            for name in ("lane on", "lane off") if number_ % 2 == 0 else ("lane off", "lane on"):
                found[name].append(await admissions(lanes[name.split()[1]]))
        return found

    found = asyncio.run(measure())
    return {
        "middleware_us": (median(found["mw on"]) - median(found["mw off"])) * 1e6,
        "lane_gauges_us": (median(found["lane on"]) - median(found["lane off"])) * 1e6,
    }


def unit_costs_by_mode(rounds: int) -> dict[str, dict[str, float]]:
    """`unit_costs` in memory (this process) and in multiprocess mode (a child)."""
    found = {"memory": unit_costs(rounds)}
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-multiproc-") as folder:
        out = subprocess.run([sys.executable, __file__, "--unit", str(rounds)],
                             env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder},
                             capture_output=True, text=True, check=True, timeout=600)
    found["multiprocess"] = json.loads(out.stdout)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="5 rounds of 20 requests")
    parser.add_argument("--unit", type=int, metavar="ROUNDS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.unit:  # the child of `unit_costs_by_mode`
        print(json.dumps(unit_costs(args.unit)))
        return
    rounds, batch = (5, 20) if args.quick else (args.rounds, args.batch)
    results: dict[str, Any] = {"rounds": rounds, "batch": batch}
    rows = []
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-metrics-") as scratch:
        root = Path(scratch)
        make_table(root)
        for where, measure in (("in-process", in_process), ("http", over_http)):
            figures = measure(root, rounds, batch)
            results[where] = figures
            for op, cases in figures.items():
                row: list[object] = [where, op]
                for clock in ("cpu", "wall"):
                    # CPU: the total over all rounds per request (a server's CPU time
                    # advances in 10 ms ticks, coarser than one round); wall: medians.
                    summary = statistics.fmean if clock == "cpu" else median
                    on, off = summary(cases["on"][clock]), summary(cases["off"][clock])
                    row += [off * 1e6, on * 1e6, on / off]
                rows.append(row)
    print(f"Metrics on vs off, {rounds} rounds of {batch} requests each, interleaved. cpu: "
          "the server's CPU time per request over all rounds (for in-process, this "
          "process's); wall: the median round's time per request:")
    print_table(["path", "operation", "cpu off µs", "cpu on µs", "cpu on/off",
                 "wall off µs", "wall on µs", "wall on/off"], rows)
    results["unit"] = unit_costs_by_mode(rounds)
    print("\nWhat metrics add, without the request (medians; µs):")
    describe = median(results["in-process"]["describe"]["off"]["wall"]) * 1e6
    print_table(["values", "per request", "per lane admission", "total",
                 "share of an in-process describe"],
                [[mode, f["middleware_us"], f["lane_gauges_us"],
                  f["middleware_us"] + f["lane_gauges_us"],
                  f"{(f['middleware_us'] + f['lane_gauges_us']) / describe:.2%}"]
                 for mode, f in results["unit"].items()])
    results["table"] = rows
    print(f"\nwritten to {write_results('metrics', results)}")


if __name__ == "__main__":
    main()
