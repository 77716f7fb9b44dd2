"""Server CPU per query under concurrent load, this checkout against a baseline copy (A/B).

Two servers over the same kind of table (IVF_PQ k=10, as `bench_query.py`): one runs
this checkout, the other ``--baseline`` (a directory holding an older copy of the
``nsframe`` package). ``--clients`` client processes query one server back to back for
``--seconds``, then the other, alternating for ``--slots`` slots each. Reported per server:
queries per second and the server process's CPU milliseconds per query (all its threads),
medians of the slots. CPU per query drifts much less than QPS on a shared machine.

    .venv/bin/python benchmarks/bench_server_cpu.py --baseline /tmp/old [--rows 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DIM, cpu_seconds, median, print_table, serve_in_subprocess, write_results
from bench_query import TABLE_ID, load, qps_processes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="directory holding the baseline nsframe package (default: none, "
                        "only this checkout is measured)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--slots", type=int, default=4)
    args = parser.parse_args(argv)
    queries = np.random.default_rng(1).random((512, DIM), dtype=np.float32)
    with contextlib.ExitStack() as stack:
        servers = {"this": stack.enter_context(serve_in_subprocess())}
        if args.baseline is not None:
            servers["baseline"] = stack.enter_context(serve_in_subprocess(code=args.baseline))
        for server in servers.values():
            with requests.Session() as http:
                load(http, server.url, args.rows)
            qps_processes(server.url, TABLE_ID, args.clients, 0.5, queries)  # warm up
        qps: dict[str, list[float]] = {name: [] for name in servers}
        cpu_ms: dict[str, list[float]] = {name: [] for name in servers}
        for slot in range(args.slots):
            for name, server in servers.items():
                before = cpu_seconds(server.pid)
                rate = qps_processes(server.url, TABLE_ID, args.clients, args.seconds, queries)
                used = cpu_seconds(server.pid) - before
                qps[name].append(rate)
                cpu_ms[name].append(1000 * used / (rate * args.seconds))
                print(f"  slot {slot + 1}/{args.slots} {name:<8} {rate:7.1f} QPS "
                      f"{cpu_ms[name][-1]:.2f} ms CPU/query", file=sys.stderr)
    rows = [[name, median(qps[name]), median(cpu_ms[name])] for name in servers]
    print(f"\n{args.clients} client processes, IVF_PQ k=10, {args.rows:,} rows, "
          f"median of {args.slots} slots of {args.seconds:g} s\n")
    print_table(["server", "QPS", "server CPU ms/query"], rows)
    results = {"rows": args.rows, "clients": args.clients, "seconds": args.seconds,
               "qps": qps, "server_cpu_ms_per_query": cpu_ms}
    print(f"\nresults: {write_results('server-cpu', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
