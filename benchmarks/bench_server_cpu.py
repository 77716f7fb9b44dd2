"""Server CPU per query under concurrent load, this checkout against a baseline (A/B).

Two servers over the same kind of table (as `bench_query.py`): B runs this checkout, A a
baseline: ``--base-rev REV`` (a git revision, exported with ``git archive`` into a
temporary directory, so no worktree is created or touched) or ``--base-src DIR`` (a
directory holding another copy of the ``nsframe`` package). ``--clients`` threads of
nsframe's client (16 by default; ``--processes``: client processes, IVF_PQ only) query one
server back to back for ``--seconds``, then the other, alternating (A, B, B, A, ...) for
``--slots`` slots each, for each ``--work``: ``count`` (count_rows), ``ivf`` (IVF_PQ k=10)
and ``fts`` (full text k=10). Reported per server and work: queries per second and the
server process's CPU milliseconds per query (all its threads), medians of the slots, and
B/A ratios. CPU per query drifts much less than QPS on a shared machine.

``--embedded`` adds the embedded default (`nsframe.connect(root)`), A and B each in a
child process of its own, alternating likewise: per call, the median wall time and the
process's mean CPU time of the same work, beside pylance's in the same child (the table
of `bench_embedded.py`, 100,000 rows x 128-d, built once).

    .venv/bin/python benchmarks/bench_server_cpu.py --base-rev main [--rows 20000] [--embedded]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DIM,
    cpu_seconds,
    median,
    print_table,
    serve_in_subprocess,
    threads_qps,
    write_results,
)
from bench_query import TABLE_ID, WORDS, load, qps_processes

import nsframe

REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def exported(rev: str) -> Iterator[Path]:
    """The ``nsframe`` package of git revision ``rev``, in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="nsframe-base-") as scratch:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "nsframe"],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch, filter="data")
        yield Path(scratch)


def package_of(code: Path) -> Path:
    """Where ``python -m`` run in ``code`` imports nsframe from (it must be ``code``)."""
    out = subprocess.run([sys.executable, "-c", "import nsframe; print(nsframe.__file__)"],
                         cwd=code, check=True, capture_output=True, text=True).stdout
    return Path(out.strip()).parent.parent


def revision(code: Path) -> str:
    found = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(code), "status", "--porcelain", "nsframe"],
                           capture_output=True, text=True).stdout.strip()
    return (found.stdout.strip() or "?") + (" + changes" if dirty else "")


WORK = ("count", "ivf", "fts")

# The embedded work in a child process importing nsframe from its working directory:
# prints {work side: [median wall ms, mean CPU ms]} per call of nsframe and of pylance,
# the two interleaved call by call.
EMBEDDED_CHILD = """
import json, statistics, sys, time
import lance, numpy as np
from lance.query import MatchQuery
import nsframe
root, calls, words = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
vectors = np.random.default_rng(5).random((64, 128), dtype=np.float32)
with nsframe.connect(root) as conn:
    tbl = conn.table("docs")
    ds = lance.dataset(conn.client.describe_table("docs")["location"])
    work = {
        "count": (lambda i: tbl.count_rows(), lambda i: ds.count_rows()),
        "ivf": (lambda i: tbl.search(vectors[i % 64]).limit(10).to_pandas(),
                lambda i: ds.to_table(nearest={"column": "vector", "q": vectors[i % 64],
                                               "k": 10}).to_pandas()),
        "fts": (lambda i: tbl.search(text=words[i % len(words)], fts_columns=["text"])
                .limit(10).to_pandas(),
                lambda i: ds.to_table(full_text_query=MatchQuery(words[i % len(words)],
                                                                 "text"),
                                      limit=10).to_pandas()),
    }
    out = {}
    for name, pair in work.items():
        for run in pair:
            for i in range(20):
                run(i)
        wall, cpu = ([], []), ([], [])
        for i in range(calls):
            for side in ((0, 1) if i % 2 == 0 else (1, 0)):  # interleaved, call by call
                started, used = time.perf_counter(), time.process_time()
                pair[side](i)
                cpu[side].append(time.process_time() - used)
                wall[side].append(time.perf_counter() - started)
        for side, label in enumerate(("nsframe", "pylance")):
            out[f"{name} {label}"] = [statistics.median(wall[side]) * 1e3,
                                      statistics.fmean(cpu[side]) * 1e3]
print(json.dumps(out))
"""


def http_work(tbl: Any, queries: np.ndarray[Any, Any]) -> dict[str, Callable[[int], object]]:
    return {
        "count": lambda i: tbl.count_rows(),
        "ivf": lambda i: tbl.search(queries[i % len(queries)]).limit(10).to_arrow(),
        "fts": lambda i: tbl.search(text=WORDS[i % len(WORDS)], fts_columns=["text"])
        .limit(10).to_arrow(),
    }


def embedded_child(code: Path, root: Path, calls: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, "-c", EMBEDDED_CHILD, str(root), str(calls),
                          ",".join(WORDS)], cwd=code, env=env, check=True,
                         capture_output=True, text=True).stdout
    result: dict[str, list[float]] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--base-rev", default=None,
                      help="git revision of the baseline (A), e.g. b00b4ad")
    base.add_argument("--base-src", "--baseline", type=Path, default=None,
                      help="directory holding the baseline nsframe package (A)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--processes", action="store_true",
                        help="client processes (IVF_PQ only), not threads")
    parser.add_argument("--work", default=",".join(WORK),
                        help="what the clients ask, comma-separated: count, ivf, fts "
                        "(empty: none, with --embedded for the embedded part alone)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--embedded", action="store_true",
                        help="also the embedded default, A and B in child processes")
    parser.add_argument("--calls", type=int, default=300, help="embedded calls per slot")
    args = parser.parse_args(argv)
    works = ["ivf"] if args.processes else [w for w in args.work.split(",") if w]
    queries = np.random.default_rng(1).random((512, DIM), dtype=np.float32)
    with contextlib.ExitStack() as stack:
        codes: dict[str, tuple[Path, str]] = {}
        if args.base_rev is not None:
            codes["A"] = (stack.enter_context(exported(args.base_rev)), args.base_rev)
        elif args.base_src is not None:
            codes["A"] = (args.base_src.resolve(), f"{args.base_src} ({revision(args.base_src)})")
        codes["B"] = (REPO, f"this checkout ({revision(REPO)})")
        for name, (code, label) in codes.items():
            if package_of(code).resolve() != code.resolve():
                raise SystemExit(f"{name}: python -m in {code} does not import its own nsframe")
            print(f"{name}: {label}", file=sys.stderr)
        servers = {name: stack.enter_context(serve_in_subprocess(code=code))
                   for name, (code, _) in codes.items() if works}
        runners: dict[str, dict[str, Callable[[int], object]]] = {}
        for name, server in servers.items():
            with requests.Session() as http:
                load(http, server.url, args.rows)
            conn = stack.enter_context(nsframe.connect(server.url))
            runners[name] = http_work(conn.table(TABLE_ID), queries)
        qps: dict[str, dict[str, list[float]]] = {w: {n: [] for n in servers} for w in works}
        cpu_ms: dict[str, dict[str, list[float]]] = {w: {n: [] for n in servers} for w in works}
        for work in works:
            for name, server in servers.items():  # warm up
                measure(args, server, runners[name][work], queries, 0.5)
            for slot in range(args.slots):
                # A B, then B A: neither always runs first after the other's load.
                order = list(servers) if slot % 2 == 0 else list(reversed(servers))
                for name in order:
                    server = servers[name]
                    before = cpu_seconds(server.pid)
                    rate = measure(args, server, runners[name][work], queries, args.seconds)
                    used = cpu_seconds(server.pid) - before
                    qps[work][name].append(rate)
                    cpu_ms[work][name].append(1000 * used / (rate * args.seconds))
                    print(f"  {work} slot {slot + 1}/{args.slots} {name} {rate:7.1f} QPS "
                          f"{cpu_ms[work][name][-1]:.3f} ms CPU/query", file=sys.stderr)
        embedded: dict[str, dict[str, list[list[float]]]] = {}
        if args.embedded:
            from bench_embedded import build

            root = Path(tempfile.gettempdir()) / "nsframe-bench-embedded-100000"
            build(root, 100_000)
            embedded = {name: {} for name in codes}
            for slot in range(args.slots):
                order = list(codes) if slot % 2 == 0 else list(reversed(codes))
                for name in order:
                    found = embedded_child(codes[name][0], root, args.calls)
                    for key, figures in found.items():
                        embedded[name].setdefault(key, []).append(figures)
                    print(f"  embedded slot {slot + 1}/{args.slots} {name}: "
                          + ", ".join(f"{k} {v[0]:.3f}" for k, v in found.items()),
                          file=sys.stderr)
    label = "client processes" if args.processes else "client threads"
    print(f"\n{args.clients} {label}, {args.rows:,} rows, median of {args.slots} slots of "
          f"{args.seconds:g} s; server CPU per query is all its threads' user + system\n")
    rows: list[list[object]] = []
    for work in works:
        for name in servers:
            rows.append([work, f"{name}: {codes[name][1]}", median(qps[work][name]),
                         median(cpu_ms[work][name])])
        if len(servers) == 2:
            rows.append([work, "B / A", median(qps[work]["B"]) / median(qps[work]["A"]),
                         median(cpu_ms[work]["B"]) / median(cpu_ms[work]["A"])])
    if rows:
        print_table(["work", "server", "QPS", "server CPU ms/query"], rows)
    if embedded:
        print("\nembedded default, 100,000 rows x 128-d, to_pandas() of k=10 results; "
              f"{args.calls} calls a slot, median of {args.slots} slots\n")
        table: list[list[object]] = []
        for work in WORK:
            cells: list[object] = [work]
            walls: dict[str, float] = {}
            for name in codes:
                ours, direct = embedded[name][f"{work} nsframe"], embedded[name][f"{work} pylance"]
                wall = median([f[0] for f in ours])
                cpu = median([f[1] for f in ours])
                # The ratio of each slot (both measured in the same child), then the median.
                ratio = median([a[0] / b[0] for a, b in zip(ours, direct, strict=True)])
                walls[name] = wall
                cells += [round(wall, 3), round(cpu, 3), f"{ratio:.2f}x"]
            if len(codes) == 2:
                cells.append(f"{walls['B'] / walls['A']:.2f}")
            table.append(cells)
        headers = ["work"]
        for name in codes:
            headers += [f"{name} ms", f"{name} CPU ms", f"{name}/pylance"]
        if len(codes) == 2:
            headers.append("B/A wall")
        print_table(headers, table)
    results = {"rows": args.rows, "clients": args.clients, "processes": args.processes,
               "seconds": args.seconds,
               "servers": {name: label for name, (_, label) in codes.items()},
               "qps": qps, "server_cpu_ms_per_query": cpu_ms, "embedded": embedded}
    print(f"\nresults: {write_results('server-cpu', results)}")
    return 0


def measure(args: argparse.Namespace, server: Any, run: Callable[[int], object],
            queries: np.ndarray[Any, Any], seconds: float) -> float:
    """Queries per second of the clients against ``server`` for ``seconds``."""
    if args.processes:
        return qps_processes(server.url, TABLE_ID, args.clients, seconds, queries)
    return threads_qps(lambda: run, args.clients, seconds)


if __name__ == "__main__":
    sys.exit(main())
