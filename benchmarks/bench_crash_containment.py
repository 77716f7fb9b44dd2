"""Cost of crash containment per query: this checkout against a baseline (A/B).

`nsframe serve` runs its worker under a supervising parent and notes each running
request in a shared-memory file (docs/server.md, Crash containment). Three measurements:

1. bookkeeping: the `_inflight.InFlight` middleware around an ASGI app that does nothing,
   against that app alone, called in this process (a JSON POST whose body is read): the
   microseconds the entry costs per request, median of ``--rounds`` rounds.
2. end to end: two servers over the same kind of table, A the baseline (``--base-rev``,
   default the merge base with main: one process, no supervisor) and B this checkout
   (a parent and one worker). One client sends requests back to back on a keep-alive
   connection, A and B alternating (A B, then B A) for ``--rounds`` rounds of
   ``--requests`` each: median latency, and the servers' CPU per request (every process
   of the server, parent included). Requests: the cheapest route (namespace exists),
   where the overhead shows most, and an IVF_PQ k=10 query; then the queries per second
   of ``--clients`` client processes.
3. the parent: its CPU while the worker served (milliseconds per second) and memory
   (resident, and unique to it: USS leaves out the library pages it shares); start-up
   time to the first answer.

    .venv/bin/python benchmarks/bench_crash_containment.py [--base-rev 795c8a8] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import requests

# This checkout's nsframe, whatever the environment has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_seconds, median, mib, print_table, serve_in_subprocess, write_results
from bench_query import TABLE_ID, load, qps_processes
from bench_server_cpu import exported, package_of

from nsframe.server._inflight import InFlight

REPO = Path(__file__).resolve().parent.parent
BODY = b'{"vector": {"single_vector": [0.1, 0.2]}, "k": 10, "filter": "id > 3"}'


# ------------------------------------------------------------------- bookkeeping
def bookkeeping(rounds: int, calls: int) -> dict[str, list[float]]:
    """Microseconds per call of a no-op app, bare and inside `InFlight`."""
    scope = {"type": "http", "method": "POST", "path": "/v1/table/ns$t/query",
             "raw_path": b"/v1/table/ns%24t/query", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1:2333"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(BODY)).encode()),
                         (b"x-request-id", b"0123456789abcdef0123456789abcdef")]}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: Any) -> None:
        pass

    async def timed(asgi: Any) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            await asgi(scope, receive, send)
        return (time.perf_counter() - started) / calls * 1e6

    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    results: dict[str, list[float]] = {"bare": [], "inflight": []}
    with tempfile.TemporaryDirectory(dir=shm) as slots:
        wrapped = InFlight(app, Path(slots) / "1")
        for _ in range(rounds):
            results["bare"].append(asyncio.run(timed(app)))
            results["inflight"].append(asyncio.run(timed(wrapped)))
    return results


# -------------------------------------------------------------------- end to end
def exists(http: requests.Session, url: str) -> None:
    resp = http.post(f"{url}/v1/namespace/bench/exists", json={})
    if resp.status_code != 200:
        raise RuntimeError(f"{url}: {resp.status_code} {resp.text}")


def query_of(vectors: np.ndarray) -> Callable[[requests.Session, str], None]:
    count = iter(range(1 << 62))

    def query(http: requests.Session, url: str) -> None:
        vector = vectors[next(count) % len(vectors)]
        resp = http.post(f"{url}/v1/table/{TABLE_ID}/query",
                         json={"vector": {"single_vector": vector.tolist()}, "k": 10})
        if resp.status_code != 200:
            raise RuntimeError(f"{url}: {resp.status_code} {resp.text}")

    return query


def server_cpu(pid: int) -> float:
    """CPU seconds of the server: the process and, supervised, its workers."""
    return cpu_seconds(pid, children=True)


def sequential(send: Callable[[requests.Session, str], None], url: str, pid: int,
               requests_: int) -> tuple[float, float]:
    """Median latency (ms) and server CPU per request (ms) of ``requests_`` in a row."""
    latencies = []
    with requests.Session() as http:
        send(http, url)  # the connection is open before the clock starts
        before = server_cpu(pid)
        for _ in range(requests_):
            started = time.perf_counter()
            send(http, url)
            latencies.append(time.perf_counter() - started)
        used = server_cpu(pid) - before
    return 1000 * median(latencies), 1000 * used / requests_


def started_in(code: Path) -> float:
    """Seconds from `nsframe serve` to its first answer."""
    began = time.perf_counter()
    with serve_in_subprocess(code=code):
        return time.perf_counter() - began


def merge_base() -> str:
    return subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "main"], check=True,
                          capture_output=True, text=True).stdout.strip()[:12]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-rev", default=None,
                        help="git revision of the baseline (A); default the merge base "
                        "with main")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=20_000,
                        help="calls per round of the bookkeeping measurement")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    base = args.base_rev or merge_base()

    keeping = bookkeeping(args.rounds, args.calls)
    cost_us = median(keeping["inflight"]) - median(keeping["bare"])
    print(f"bookkeeping: bare app {median(keeping['bare']):.2f} us/call, in InFlight "
          f"{median(keeping['inflight']):.2f} us/call: {cost_us:.2f} us per request",
          file=sys.stderr)

    vectors = np.random.default_rng(1).random((256, 128), dtype=np.float32)
    kinds = {"namespace exists": exists, "IVF_PQ k=10 query": query_of(vectors)}
    latency: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    qps: dict[str, list[float]] = {"A": [], "B": []}
    with contextlib.ExitStack() as stack:
        codes = {"A": stack.enter_context(exported(base)), "B": REPO}
        for name, code in codes.items():
            if package_of(code).resolve() != code.resolve():
                raise SystemExit(f"{name}: python -m in {code} does not import its own nsframe")
        startup = {name: [started_in(code) for _ in range(2)] for name, code in codes.items()}
        servers = {name: stack.enter_context(serve_in_subprocess(code=code))
                   for name, code in codes.items()}
        pids = {name: server.process.pid for name, server in servers.items()}
        for server in servers.values():
            with requests.Session() as http:
                load(http, server.url, args.rows)
            qps_processes(server.url, TABLE_ID, args.clients, 0.5, vectors)  # warm up
        parent = psutil.Process(pids["B"])
        parent_before, wall_before = parent.cpu_times(), time.monotonic()
        for round_ in range(args.rounds):
            order = ["A", "B"] if round_ % 2 == 0 else ["B", "A"]
            for name in order:
                for kind, send in kinds.items():
                    ms, cpu_ms = sequential(send, servers[name].url, pids[name], args.requests)
                    latency.setdefault((name, kind), []).append(ms)
                    cpu.setdefault((name, kind), []).append(cpu_ms)
                qps[name].append(qps_processes(servers[name].url, TABLE_ID, args.clients,
                                               args.seconds, vectors))
            print(f"  round {round_ + 1}/{args.rounds} done", file=sys.stderr)
        parent_after = parent.cpu_times()
        wall = time.monotonic() - wall_before
        parent_ms_per_s = 1000 * (parent_after.user + parent_after.system
                                  - parent_before.user - parent_before.system) / wall
        # Resident, and unique to the process (USS: not the libraries' pages it shares).
        memory = {name: (process.memory_info().rss, process.memory_full_info().uss)
                  for name, process in [("A server", psutil.Process(pids["A"])),
                                        ("B parent", parent),
                                        ("B worker", psutil.Process(servers["B"].pid))]}

    print(f"\nA: {base} (no supervisor), B: this checkout (parent + 1 worker); "
          f"{args.rows:,} rows, median of {args.rounds} rounds\n")
    print_table(["bookkeeping, in process", "us/request"], [
        ["no-op ASGI app", median(keeping["bare"])],
        ["the same inside InFlight", median(keeping["inflight"])],
        ["cost of the entry", cost_us]])
    print()
    rows: list[list[object]] = []
    for kind in kinds:
        a_ms, b_ms = median(latency[("A", kind)]), median(latency[("B", kind)])
        a_cpu, b_cpu = median(cpu[("A", kind)]), median(cpu[("B", kind)])
        rows.append([kind, a_ms, b_ms, b_ms / a_ms, a_cpu, b_cpu, b_cpu / a_cpu])
    print_table(["request, 1 client", "A ms", "B ms", "B/A", "A CPU ms", "B CPU ms", "B/A"],
                rows)
    print()
    print_table([f"{args.clients} client processes", "A QPS", "B QPS", "B/A"],
                [["IVF_PQ k=10 query", median(qps["A"]), median(qps["B"]),
                  median(qps["B"]) / median(qps["A"])]])
    print()
    print_table(["server", "start-up s (median of 2)", "RSS MiB", "USS MiB"], [
        ["A: one process", median(startup["A"]), *map(mib, memory["A server"])],
        ["B: the parent", "", *map(mib, memory["B parent"])],
        ["B: the worker", median(startup["B"]), *map(mib, memory["B worker"])]])
    print(f"\nB's parent used {parent_ms_per_s:.2f} ms of CPU per second while its worker served")
    results = {"base": base, "rows": args.rows, "rounds": args.rounds,
               "requests": args.requests, "bookkeeping_us": keeping,
               "latency_ms": {f"{n} {k}": v for (n, k), v in latency.items()},
               "server_cpu_ms": {f"{n} {k}": v for (n, k), v in cpu.items()},
               "qps": qps, "startup_s": startup, "rss_uss_bytes": memory,
               "parent_cpu_ms_per_s": parent_ms_per_s}
    print(f"\nresults: {write_results('crash-containment', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
