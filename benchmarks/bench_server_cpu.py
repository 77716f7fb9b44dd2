"""Server CPU per query under concurrent load, this checkout against a baseline (A/B).

Two servers over the same kind of table (IVF_PQ k=10, as `bench_query.py`): B runs this
checkout, A a baseline: ``--base-rev REV`` (a git revision, exported with ``git archive``
into a temporary directory, so no worktree is created or touched) or ``--base-src DIR``
(a directory holding another copy of the ``nsframe`` package). ``--clients`` client
processes query one server back to back for ``--seconds``, then the other, alternating
(A, B, B, A, ...) for ``--slots`` slots each. Reported per server: queries per second and
the server process's CPU milliseconds per query (all its threads), medians of the slots,
and B/A ratios. CPU per query drifts much less than QPS on a shared machine.

    .venv/bin/python benchmarks/bench_server_cpu.py --base-rev b00b4ad [--rows 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DIM, cpu_seconds, median, print_table, serve_in_subprocess, write_results
from bench_query import TABLE_ID, load, qps_processes

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--base-rev", default=None,
                      help="git revision of the baseline (A), e.g. b00b4ad")
    base.add_argument("--base-src", "--baseline", type=Path, default=None,
                      help="directory holding the baseline nsframe package (A)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--slots", type=int, default=4)
    args = parser.parse_args(argv)
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
                   for name, (code, _) in codes.items()}
        for server in servers.values():
            with requests.Session() as http:
                load(http, server.url, args.rows)
            qps_processes(server.url, TABLE_ID, args.clients, 0.5, queries)  # warm up
        qps: dict[str, list[float]] = {name: [] for name in servers}
        cpu_ms: dict[str, list[float]] = {name: [] for name in servers}
        for slot in range(args.slots):
            # A B, then B A: neither always runs first after the other's load.
            order = list(servers) if slot % 2 == 0 else list(reversed(servers))
            for name in order:
                server = servers[name]
                before = cpu_seconds(server.pid)
                rate = qps_processes(server.url, TABLE_ID, args.clients, args.seconds, queries)
                used = cpu_seconds(server.pid) - before
                qps[name].append(rate)
                cpu_ms[name].append(1000 * used / (rate * args.seconds))
                print(f"  slot {slot + 1}/{args.slots} {name} {rate:7.1f} QPS "
                      f"{cpu_ms[name][-1]:.2f} ms CPU/query", file=sys.stderr)
    rows = [[f"{name}: {codes[name][1]}", median(qps[name]), median(cpu_ms[name])]
            for name in servers]
    if len(servers) == 2:
        rows.append(["B / A", median(qps["B"]) / median(qps["A"]),
                     median(cpu_ms["B"]) / median(cpu_ms["A"])])
    print(f"\n{args.clients} client processes, IVF_PQ k=10, {args.rows:,} rows, "
          f"median of {args.slots} slots of {args.seconds:g} s\n")
    print_table(["server", "QPS", "server CPU ms/query"], rows)
    results = {"rows": args.rows, "clients": args.clients, "seconds": args.seconds,
               "servers": {name: label for name, (_, label) in codes.items()},
               "qps": qps, "server_cpu_ms_per_query": cpu_ms}
    print(f"\nresults: {write_results('server-cpu', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
