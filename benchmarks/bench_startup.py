"""Start-up time of `nsframe serve` against the number of tables in its root (issue 27, 10).

Before it serves, `nsframe serve` checks the store, then collects what crashed writers
left (storage.md, Garbage): it lists the catalog and every table's data files. This
measures what that costs: roots of 10 and 10,000 one-row tables, and for each the time
from spawning `nsframe serve` to its first answer (median of ``--rounds``, the sizes
interleaved, the order rotating) and, apart, the collection alone in this process
(`gc.collect`, dry run, on a fresh catalog). Ratios are to the smallest root, in the
same run.

    .venv/bin/python benchmarks/bench_startup.py                    # 10 and 10,000, local
    .venv/bin/python benchmarks/bench_startup.py --tables 10,1000 --s3   # moto on loopback

Building the 10,000-table root takes about a minute on a local disk (4 ms a table); on
moto about ten times that, hence the smaller default there.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import nsframe
from nsframe.server import serve_in_thread
from nsframe.server._storage import gc
from nsframe.server._storage.catalog import Catalog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, print_table, serve_in_subprocess, write_results


def build(root: str, tables: int, options: dict[str, str]) -> float:
    """``tables`` one-row tables in namespace ``n`` of ``root``; seconds it took."""
    started = time.perf_counter()
    with serve_in_thread(root, storage_options=options) as server, \
            nsframe.connect(server.url) as conn:
        conn.create_namespace("n")
        for i in range(tables):
            conn.create_table(f"n$t{i}", {"id": [i]})
    return time.perf_counter() - started


def startup_seconds(root: str) -> float:
    """From spawning `nsframe serve ROOT` to its first answer."""
    started = time.perf_counter()
    with serve_in_subprocess(root, startup_timeout=1800):
        return time.perf_counter() - started


def collection_seconds(root: str, options: dict[str, str]) -> float:
    """`gc.collect` alone (a dry run), on a catalog opened beforehand."""
    catalog = Catalog(root, storage_options=options)
    try:
        started = time.perf_counter()
        gc.collect(catalog, dry_run=True)
        return time.perf_counter() - started
    finally:
        catalog.close()


@contextmanager
def roots(sizes: list[int], s3: bool) -> Iterator[tuple[dict[int, str], dict[str, str]]]:
    with ExitStack() as stack:
        if not s3:
            # A server's last record may still be going away when the folder is removed.
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="nsframe-bench-startup-", ignore_cleanup_errors=True)))
            yield {n: str(scratch / f"root-{n}") for n in sizes}, {}
            return
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.support.s3 import S3Endpoint, moto_server

        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="moto-", ignore_cleanup_errors=True)))
        url = stack.enter_context(moto_server(logs))
        endpoint = S3Endpoint(url, "bench-startup")
        endpoint.create_bucket()
        os.environ.update(endpoint.env())  # `nsframe serve` takes the store from them
        yield {n: endpoint.new_root(f"startup-{n}") for n in sizes}, endpoint.options()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default="10,10000",
                        help="root sizes, comma-separated (default 10,10000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--s3", action="store_true", help="roots on moto's S3 on loopback")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.tables.split(","))
    with roots(sizes, args.s3) as (where, options):
        built = {n: build(where[n], n, options) for n in sizes}
        starts: dict[int, list[float]] = {n: [] for n in sizes}
        collections: dict[int, list[float]] = {n: [] for n in sizes}
        for round_ in range(args.rounds):
            order = sizes[round_ % len(sizes):] + sizes[:round_ % len(sizes)]
            for n in order:
                starts[n].append(startup_seconds(where[n]))
                collections[n].append(collection_seconds(where[n], options))
    base = sizes[0]
    rows = [[f"{n:,}", f"{built[n]:.1f} s", f"{median(starts[n]):.2f} s",
             f"{median(starts[n]) / median(starts[base]):.2f}x",
             f"{median(collections[n]):.2f} s"] for n in sizes]
    print(f"start-up of `nsframe serve` ({'moto S3' if args.s3 else 'local disk'}; "
          f"median of {args.rounds})")
    print_table(["tables", "built in", "spawn to first answer", f"vs {base:,}",
                 "collection alone"], rows)
    path = write_results("startup", {
        "store": "moto-s3" if args.s3 else "local", "rounds": args.rounds,
        "sizes": {str(n): {"build_seconds": built[n], "startup_seconds": starts[n],
                           "collection_seconds": collections[n]} for n in sizes}})
    print(f"figures in {path}")


if __name__ == "__main__":
    main()
