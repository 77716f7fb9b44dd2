"""The embedded default against pylance in this process: k=10 queries into pandas.

100,000 rows (id, six random words, 128-d float32 vector), IVF_PQ 64/16 and FTS, as in
the performance issue (benchmarks/bench_issue.py). Paths, interleaved round by round
so that the drift of a shared machine hits all alike:

- ``direct``: pylance ``ds.to_table(...).to_pandas()`` on the table's own files;
- ``embedded``: ``nsframe.connect(root)``, ``tbl.search(...).to_pandas()``; its server
  hands a small result over as Arrow data (`EmbeddedTransport(arrow=True)`);
- ``embedded ipc``: the same through `EmbeddedTransport(arrow=False)`: the result
  encoded as an IPC file and decoded again, as before.

Medians in ms and ratios to ``direct``. The table is built once into ``--root`` (default
a folder under the system's temp dir) and reused by later runs.

``--layers`` shows instead where the embedded IVF_PQ query spends its time outside Lance:
the same query with each layer of the server's ASGI stack bypassed in turn, with all of
the middleware bypassed, and with the route's endpoint called alone (validation,
catalog, freshness and handler, nothing around them): a floor, not a way to run.

Run: ``.venv/bin/python benchmarks/bench_embedded.py [--rounds N] [--layers]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
from _common import DIM, batches, median, print_table, write_results
from bench_query import PQ, WORDS, worded
from lance.query import MatchQuery

import nsframe
from nsframe.transport import EmbeddedTransport

Run = Callable[[], Any]


def build(root: Path, rows: int) -> None:
    with nsframe.connect(root) as conn:
        if "docs" in conn.table_names():
            return
        started = time.perf_counter()
        tbl = conn.create_table("docs", worded(batches(rows)))
        tbl.create_index("vector", index_type="IVF_PQ", **PQ)
        tbl.create_fts_index("text")
        print(f"built {rows:,} rows with indexes in {time.perf_counter() - started:.0f} s")


def interleaved(cases: dict[str, Run], rounds: int, warmup: int = 5) -> dict[str, list[float]]:
    for run in cases.values():
        for _ in range(warmup):
            run()
    times: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            started = time.perf_counter()
            cases[name]()
            times[name].append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--layers", action="store_true",
                        help="where the embedded query's time goes, layer by layer")
    args = parser.parse_args()
    root = args.root or Path(tempfile.gettempdir()) / f"nsframe-bench-embedded-{args.rows}"
    build(root, args.rows)
    rng = np.random.default_rng(11)
    probes = rng.random((64, DIM), dtype=np.float32)
    state = {"i": 0}

    def nxt() -> tuple[np.ndarray[Any, Any], str]:
        state["i"] += 1
        return probes[state["i"] % len(probes)], WORDS[state["i"] % len(WORDS)]

    with nsframe.connect(root) as embedded:
        tbl = embedded.table("docs")
        ds = lance.dataset(embedded.client.describe_table("docs")["location"])
        if args.layers:
            layers(embedded, ds, nxt, args.rounds)
            return
        app = embedded.client.transport._app  # type: ignore[attr-defined]
        token = embedded.client.headers["Authorization"].split()[1]
        ipc = nsframe.connect(embedded.url, token=token,
                              transport=EmbeddedTransport(app, arrow=False))
        tables = {"embedded": tbl, "embedded ipc": ipc.table("docs")}
        work: dict[str, tuple[Callable[[Any, Any, str], Any], Callable[[Any, str], Any]]] = {
            "IVF_PQ k=10": (
                lambda t, v, w: t.search(v).limit(10),
                lambda v, w: ds.to_table(nearest={"column": "vector", "q": v, "k": 10})),
            "IVF_PQ + filter k=10": (
                lambda t, v, w: t.search(v).where("id % 2 = 0", prefilter=True).limit(10),
                lambda v, w: ds.to_table(nearest={"column": "vector", "q": v, "k": 10},
                                         filter="id % 2 = 0", prefilter=True)),
            "full text k=10": (
                lambda t, v, w: t.search(text=w, fts_columns=["text"]).limit(10),
                lambda v, w: ds.to_table(full_text_query=MatchQuery(w, "text"), limit=10)),
        }
        rows = []
        results: dict[str, Any] = {}
        for name, (client, direct) in work.items():
            cases: dict[str, Run] = {"direct": lambda d=direct: d(*nxt()).to_pandas()}
            for path, t in tables.items():
                cases[path] = lambda c=client, t=t: c(t, *nxt()).to_pandas()
            times = interleaved(cases, args.rounds)
            ms = {path: median(v) * 1e3 for path, v in times.items()}
            rows.append([name, round(ms["direct"], 3), round(ms["embedded"], 3),
                         round(ms["embedded ipc"], 3),
                         round(ms["embedded"] / ms["direct"], 2),
                         round(ms["embedded ipc"] / ms["direct"], 2)])
            results[name] = {"median_ms": ms, "all_s": times}
        counts = {path: median([_time(lambda t=t: t.count_rows()) for _ in range(200)]) * 1e3
                  for path, t in tables.items()}
        ipc.close()
    print(f"\nmedian ms over {args.rounds} interleaved rounds, {args.rows:,} rows x {DIM}-d")
    print_table(["to_pandas()", "pylance", "embedded", "embedded ipc", "embedded/pylance",
                 "ipc/pylance"], rows)
    print(f"count_rows: embedded {counts['embedded']:.3f} ms, "
          f"embedded ipc {counts['embedded ipc']:.3f} ms")
    path = write_results("embedded", {"rows": args.rows, "rounds": args.rounds,
                                      "work": results, "count_rows_ms": counts})
    print(f"\nresults: {path}")


def layers(conn: nsframe.Connection, ds: Any, nxt: Callable[[], tuple[Any, str]],
           rounds: int) -> None:
    """IVF_PQ k=10 into pandas with parts of the ASGI stack bypassed (see the docstring)."""
    from starlette.requests import Request

    from nsframe.server._routes import ROUTES

    transport = conn.client.transport
    full = transport._app  # type: ignore[attr-defined]
    chain = [full]
    while type(chain[-1]).__name__ != "Starlette":
        chain.append(chain[-1].app)
    starlette = chain[-1]
    route = next(r for r in ROUTES if r.operation == "query_table")

    async def endpoint_alone(scope: Any, receive: Any, send: Any) -> None:
        scope["path_params"] = {"id": "docs"}
        scope["app"] = starlette
        response = await route.endpoint(Request(scope, receive, send))
        await response(scope, receive, send)

    tbl = conn.table("docs")

    def through(app: Any, skip: int | None = None) -> Run:
        def run() -> Any:
            transport._app = app  # type: ignore[attr-defined]
            parent = chain[skip - 1] if skip is not None else None
            if parent is not None:
                parent.app = chain[skip + 1]  # type: ignore[operator]
            try:
                return tbl.search(nxt()[0]).limit(10).to_pandas()
            finally:
                if parent is not None:
                    parent.app = chain[skip]  # type: ignore[index]
                transport._app = full  # type: ignore[attr-defined]
        return run

    cases: dict[str, Run] = {
        "pylance": lambda: ds.to_table(nearest={"column": "vector", "q": nxt()[0],
                                                "k": 10}).to_pandas(),
        "embedded": through(full),
        **{f"without {type(chain[i]).__name__}": through(full, i)
           for i in range(1, len(chain) - 1)},
        "without our middleware": through(starlette),
        "endpoint alone": through(endpoint_alone),
    }
    times = interleaved(cases, rounds)
    direct = median(times["pylance"])
    whole = median(times["embedded"])
    rows = [[name, round(median(v) * 1e3, 3), round(median(v) / direct, 3),
             round((whole - median(v)) * 1e6)] for name, v in times.items()]
    print(f"\nIVF_PQ k=10 to_pandas(), median of {rounds} interleaved rounds")
    print_table(["path", "ms", "x pylance", "saves (us)"], rows)
    write_results("embedded-layers", {"rounds": rounds,
                                      "median_ms": {n: median(v) * 1e3
                                                    for n, v in times.items()}})


def _time(run: Run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
