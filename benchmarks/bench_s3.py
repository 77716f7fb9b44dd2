"""Queries and inserts on an s3:// root: nsframe vs direct pylance on the same root, and
the object-store requests each query costs.

An S3 endpoint runs on loopback (moto's server mode, a pip package; started here). One
table of (id, six random words, 128-d vector) with an IVF_PQ and an FTS index is
created through nsframe; pylance opens the very same dataset at describe's ``location``.
The query cases are `bench_query`'s, but for ``vector-flat`` unless asked (``--cases``):
brute force reads every vector from the store for each query. Paths, interleaved in
every round:

- ``direct``: `LanceDataset.to_table` on a dataset opened once (it never looks for newer
  versions: the limit);
- ``direct-fresh``: the same, after ``checkout_version(latest_version)`` (a LIST of
  ``_versions/``): what in-process code pays to see other writers' commits;
- ``nsframe``: `nsframe serve` on the root, strong reads (the default);
- ``nsframe-rci``: `nsframe serve --read-consistency-interval 10`.

Then inserts of ``--insert-rows`` rows: one streamed HTTP insert vs
``lance.write_dataset(mode="append")`` into a table at its location, interleaved.

Requests are counted afterwards by a loopback proxy in front of the endpoint (servers
and datasets reaching the store through it, same data); the timed runs go to the
endpoint directly, so the proxy costs them nothing.

    .venv/bin/python benchmarks/bench_s3.py             # 20,000 rows, 100 rounds
    .venv/bin/python benchmarks/bench_s3.py --quick     # 10,000 rows, 30 rounds

moto copies a whole object out of its store for every ranged GET, so on moto a query's
time grows with the size of the data files it touches, not with what it reads: a bigger
table measures moto. Request counts do not depend on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (
    DIM,
    IpcStreamBody,
    Timing,
    _stopped_at_exit,
    _wait_until_up,
    batches,
    free_port,
    median,
    print_table,
    schema,
    write_results,
)
from bench_query import CASES, NAMESPACE, PQ, TABLE_ID, WORDS, ok, post_query
from bench_query import load as load_query_table

from tests.support.s3 import Proxy, S3Endpoint, moto_server

INTERVAL = 10.0
QUERY_PATHS = ("direct", "direct-fresh", "nsframe", "nsframe-rci")
INSERT_TABLE = f"{NAMESPACE}$ins"
DIRECT_TABLE = f"{NAMESPACE}$ins_direct"
ARROW_STREAM = {"Content-Type": "application/vnd.apache.arrow.stream"}


@dataclass
class Options:
    cases: list[Any]
    rows: int
    rounds: int
    warmup: int
    insert_rows: int
    inserts: int
    counted: int


@contextmanager
def serve(root: str, env: Mapping[str, str], *extra: str) -> Iterator[str]:
    """`nsframe serve ROOT` in a child process, reaching the store as ``env`` says."""
    port = free_port()
    command = [sys.executable, "-m", "nsframe._cli", "serve", root, "--port", str(port),
               "--log-level", "warning", *extra]
    repo = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(command, cwd=repo, env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}"
    with _stopped_at_exit(process):
        _wait_until_up(url, process, 60.0)
        yield url


def load(http: requests.Session, url: str, rows: int) -> None:
    """bench_query's table (rows and indexes) and the two insert tables, all through
    nsframe."""
    load_query_table(http, url, rows)
    for table in (INSERT_TABLE, DIRECT_TABLE):
        ok(http.post(f"{url}/v1/table/{table}/create",
                     data=IpcStreamBody(batches(10), schema()), headers=ARROW_STREAM))


def location(http: requests.Session, url: str, table: str) -> str:
    found: str = ok(http.post(f"{url}/v1/table/{table}/describe", json={}))["location"]
    return found


def fresh(ds: lance.LanceDataset) -> lance.LanceDataset:
    """``ds`` at the latest version: what in-process code does to see others' commits."""
    latest = ds.latest_version
    return ds if latest == ds.version else ds.checkout_version(latest)


def query_paths(http: requests.Session, urls: dict[str, str],
                ds: lance.LanceDataset) -> dict[str, Callable[[Any, np.ndarray, str], Any]]:
    """Each path as a function of (case, query vector, word)."""
    return {
        "direct": lambda case, q, w: case.direct(ds, q, w),
        "direct-fresh": lambda case, q, w: case.direct(fresh(ds), q, w),
        "nsframe": lambda case, q, w: post_query(http, urls["nsframe"], TABLE_ID,
                                                 case.body(q, w)),
        "nsframe-rci": lambda case, q, w: post_query(http, urls["nsframe-rci"], TABLE_ID,
                                                     case.body(q, w)),
    }


def time_queries(options: Options, paths: dict[str, Callable[[Any, np.ndarray, str], Any]],
                 queries: np.ndarray, words: Sequence[str]) -> dict[tuple[str, str], Timing]:
    timings = {(c.name, p): Timing(f"{c.name}/{p}") for c in options.cases
               for p in QUERY_PATHS}
    for i, (q, word) in enumerate(zip(queries, words, strict=True)):
        for case in options.cases:
            # The order rotates each round, so no path always follows another.
            order = QUERY_PATHS[i % 4:] + QUERY_PATHS[:i % 4]
            for path in order:
                started = time.perf_counter()
                paths[path](case, q, word)
                if i >= options.warmup:
                    timings[(case.name, path)].seconds.append(time.perf_counter() - started)
    return timings


def http_insert(http: requests.Session, url: str, rows: int, start: int) -> None:
    ok(http.post(f"{url}/v1/table/{INSERT_TABLE}/insert", params={"mode": "append"},
                 data=IpcStreamBody(batches(rows, start=start), schema()), headers=ARROW_STREAM))


def direct_insert(uri: str, options: dict[str, str], rows: int, start: int) -> None:
    reader = pa.RecordBatchReader.from_batches(schema(), batches(rows, start=start))
    lance.write_dataset(reader, uri, mode="append", storage_options=options)


def time_inserts(options: Options, http: requests.Session, url: str, direct_uri: str,
                 storage: dict[str, str]) -> dict[str, Timing]:
    timings = {"direct": Timing("insert/direct"), "nsframe": Timing("insert/nsframe")}
    start = 1_000_000
    for i in range(options.inserts + 1):  # the first of each is a warm-up
        runs = [("nsframe", partial(http_insert, http, url)),
                ("direct", partial(direct_insert, direct_uri, storage))]
        for name, insert in runs if i % 2 == 0 else runs[::-1]:
            started = time.perf_counter()
            insert(options.insert_rows, start)
            start += options.insert_rows
            if i:
                timings[name].seconds.append(time.perf_counter() - started)
    return timings


def count_requests(options: Options, endpoint: S3Endpoint, root: str, queries: np.ndarray,
                   words: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Object-store requests per query (and per insert), by kind, for each path."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    with ExitStack() as stack:
        proxy = stack.enter_context(Proxy(endpoint.url))
        counted = endpoint.through(proxy.url)
        urls = {"nsframe": stack.enter_context(serve(root, counted.env())),
                "nsframe-rci": stack.enter_context(
                    serve(root, counted.env(), "--read-consistency-interval", str(INTERVAL)))}
        http = stack.enter_context(requests.Session())
        ds = lance.dataset(location(http, urls["nsframe"], TABLE_ID),
                           storage_options=counted.options())
        paths = query_paths(http, urls, ds)
        n = options.counted
        for case in options.cases:
            found[case.name] = {}
            for path in QUERY_PATHS:
                for q, w in zip(queries[:3], words[:3], strict=True):  # warm caches
                    paths[path](case, q, w)
                proxy.reset()
                for q, w in zip(queries[:n], words[:n], strict=True):
                    paths[path](case, q, w)
                found[case.name][path] = _per(proxy.counts, n)
        direct_uri = location(http, urls["nsframe"], DIRECT_TABLE)
        found["insert"] = {}
        for path, insert in (("nsframe", partial(http_insert, http, urls["nsframe"])),
                             ("direct", partial(direct_insert, direct_uri,
                                                counted.options()))):
            proxy.reset()
            for k in range(3):
                insert(options.insert_rows, 50_000_000 + k * options.insert_rows)
            found["insert"][path] = _per(proxy.counts, 3)
    return found


def _per(counts: Counter[str], n: int) -> dict[str, float]:
    per = {kind: value / n for kind, value in sorted(counts.items())}
    per["total"] = sum(counts.values()) / n
    return per


def run(options: Options) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    queries = rng.random((options.rounds + options.warmup, DIM), dtype=np.float32)
    words = [WORDS[i % len(WORDS)] for i in range(len(queries))]
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-s3-") as scratch, \
            moto_server(Path(scratch)) as url:
        endpoint = S3Endpoint(url, f"bench-{uuid.uuid4().hex[:8]}")
        endpoint.create_bucket()
        root = endpoint.new_root("bench")
        storage = endpoint.options()
        with ExitStack() as stack:
            urls = {"nsframe": stack.enter_context(serve(root, endpoint.env())),
                    "nsframe-rci": stack.enter_context(
                        serve(root, endpoint.env(), "--read-consistency-interval",
                              str(INTERVAL)))}
            http = stack.enter_context(requests.Session())
            load(http, urls["nsframe"], options.rows)
            ds = lance.dataset(location(http, urls["nsframe"], TABLE_ID),
                               storage_options=storage)
            paths = query_paths(http, urls, ds)
            rows = {c.name: [int(paths[p](c, queries[0], words[0]).num_rows)
                             for p in QUERY_PATHS] for c in options.cases}
            queries_timed = time_queries(options, paths, queries, words)
            inserts = time_inserts(options, http, urls["nsframe"],
                                   location(http, urls["nsframe"], DIRECT_TABLE), storage)
        requests_per = count_requests(options, endpoint, root, queries, words)
    report(options, queries_timed, rows, inserts, requests_per)
    return {"rows": options.rows, "rounds": options.rounds, "index": PQ,
            "cases": [c.name for c in options.cases], "insert_rows": options.insert_rows,
            "inserts": options.inserts, "read_consistency_interval": INTERVAL,
            "timings": [t.summary() for t in queries_timed.values()],
            "result_rows": rows, "insert_timings": [t.summary() for t in inserts.values()],
            "requests_per_operation": requests_per}


def report(options: Options, timings: dict[tuple[str, str], Timing],
           rows: dict[str, list[int]], inserts: dict[str, Timing],
           requests_per: dict[str, dict[str, dict[str, float]]]) -> None:
    table = []
    for case in options.cases:
        direct = timings[(case.name, "direct")]
        for k, path in enumerate(QUERY_PATHS):
            t = timings[(case.name, path)]
            per = requests_per[case.name][path]
            table.append([case.name, path, rows[case.name][k], t.median * 1e3, t.p99 * 1e3,
                          t.median / direct.median, per["total"],
                          " ".join(f"{k}={v:g}" for k, v in per.items() if k != "total")])
    print(f"\nqueries on s3:// (moto), {options.rows:,} rows, {options.rounds} rounds")
    print_table(["query", "path", "rows", "p50 ms", "p99 ms", "ratio p50", "requests",
                 "by kind"], table)
    direct = median(inserts["direct"].seconds)
    print(f"\ninserts of {options.insert_rows:,} rows, median of {options.inserts}")
    print_table(["path", "median s", "rows/s", "ratio", "requests", "by kind"], [
        [name, median(t.seconds), options.insert_rows / median(t.seconds),
         median(t.seconds) / direct, requests_per["insert"][name]["total"],
         " ".join(f"{k}={v:g}" for k, v in requests_per["insert"][name].items()
                  if k != "total")]
        for name, t in inserts.items()])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=None, help="table size (default 20,000)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 100)")
    parser.add_argument("--insert-rows", type=int, default=None,
                        help="rows per timed insert (default 20,000)")
    parser.add_argument("--inserts", type=int, default=5, help="timed inserts per path (5)")
    parser.add_argument("--quick", action="store_true", help="10,000 rows, 30 rounds")
    parser.add_argument("--cases", default="vector-ivfpq,full-text,filter-scan",
                        help="comma-separated query cases, or 'all' (adds vector-flat)")
    args = parser.parse_args(argv)
    names = [c.name for c in CASES] if args.cases == "all" else args.cases.split(",")
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}")
    options = Options(
        cases=[c for c in CASES if c.name in names],
        rows=args.rows or (10_000 if args.quick else 20_000),
        rounds=args.rounds or (30 if args.quick else 100),
        warmup=5 if args.quick else 10,
        insert_rows=args.insert_rows or (10_000 if args.quick else 20_000),
        inserts=args.inserts,
        counted=10 if args.quick else 20,
    )
    results = run(options)
    print(f"results: {write_results('s3', results)}")


if __name__ == "__main__":
    main()
