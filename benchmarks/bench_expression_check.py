"""What the SQL expression budget costs a request (issue 23, point 1).

Two measurements, in one process:

1. The check alone: microseconds per call of `check_expressions` on a decoded query
   request, for a typical filter, a filter near the default operator limit, a 10,000-value
   IN list and a projection of three expressions (median of ``--repeat`` timings of
   ``--number`` calls each).
2. Through the server: a filter query (k=10) over HTTP to the in-process server, with the
   check on and, as the baseline, switched off (`endpoint`'s `check_expressions` replaced
   by a no-op); rounds interleaved, medians and the ratio reported, and the check's share
   of the request.

    .venv/bin/python benchmarks/bench_expression_check.py [--rows 100000] [--rounds 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, print_table, write_results

from nsframe.server import serve_in_thread
from nsframe.server._http import handler
from nsframe.server._http.expressions import check_expressions
from nsframe.server._http.validation import decode
from nsframe.server._limits import Limits
from nsframe.server._models.query import QueryRequest

TYPICAL = {"filter": "id % 100 = 7 AND text LIKE 'doc%'", "k": 10,
           "columns": ["id", "text"]}
BODIES: dict[str, dict[str, Any]] = {
    "typical filter": TYPICAL,
    "filter of 120 ORs (238 operators)": {
        "filter": " OR ".join(f"id = {i}" for i in range(120)), "k": 10},
    "IN list of 10,000 values": {
        "filter": "id IN (" + ",".join(str(i) for i in range(10_000)) + ")", "k": 10},
    "projection of 3 expressions": {
        "columns": {"id": "id", "double": "id * 2", "label": "text || '-' || text"},
        "k": 10},
}


def check_alone(number: int, repeat: int) -> list[list[object]]:
    limits = Limits()
    rows: list[list[object]] = []
    for name, body in BODIES.items():
        request = decode(QueryRequest, json.dumps(body).encode(), {})
        times = timeit.repeat(lambda r=request: check_expressions(r, limits),  # type: ignore[misc]
                              number=number, repeat=repeat)
        rows.append([name, median(times) / number * 1e6])
    return rows


def _no_check(args: object, limits: Limits) -> None:
    """The baseline: the server as it was before the check."""


def through_server(rows: int, rounds: int) -> dict[str, float]:
    table = pa.table({"id": pa.array(range(rows), pa.int64()),
                      "text": pa.array([f"document {i}" for i in range(rows)])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    real_check = check_expressions
    seconds: dict[str, list[float]] = {"check on": [], "check off": []}
    with tempfile.TemporaryDirectory() as root, serve_in_thread(root) as server, \
            requests.Session() as http:
        url = f"{server.url}/v1/table/bench$t"
        http.post(f"{server.url}/v1/namespace/bench/create", json={}).raise_for_status()
        http.post(f"{url}/create", data=sink.getvalue().to_pybytes(),
                  headers={"Content-Type": "application/vnd.apache.arrow.stream"}
                  ).raise_for_status()
        for i in range(rounds + 10):  # the first 10 rounds warm up
            order = ("check on", "check off") if i % 2 else ("check off", "check on")
            for case in order:
                setattr(handler, "check_expressions",  # noqa: B010 - the switch
                        real_check if case == "check on" else _no_check)
                started = timeit.default_timer()
                resp = http.post(f"{url}/query", json=TYPICAL)
                elapsed = timeit.default_timer() - started
                resp.raise_for_status()
                if i >= 10:
                    seconds[case].append(elapsed)
        setattr(handler, "check_expressions", real_check)  # noqa: B010
    return {case: median(values) for case, values in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()

    alone = check_alone(args.number, args.repeat)
    print("The check alone (check_expressions on a decoded QueryRequest):")
    print_table(["request", "µs per call"], alone)
    print()
    server = through_server(args.rows, args.rounds)
    typical_us = float(alone[0][1])  # type: ignore[arg-type]
    on, off = server["check on"] * 1e3, server["check off"] * 1e3
    print(f"A filter query (k=10) over HTTP, {args.rows:,} rows, median of {args.rounds}:")
    print_table(["case", "ms per request"], [["check off (before)", off], ["check on", on]])
    print(f"ratio on/off: {on / off:.3f}; the check's share of the request: "
          f"{typical_us / 1e3 / on * 100:.3f}% ({typical_us:.1f} µs of {on:.2f} ms)")
    path = write_results("bench_expression_check", {
        "check_alone_us": {str(r[0]): r[1] for r in alone},
        "request_ms": {"check_off": off, "check_on": on, "ratio": on / off},
    })
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"written to {path}")


if __name__ == "__main__":
    main()
