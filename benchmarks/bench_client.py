"""The client's own overhead: queries and bulk reads through nsframe vs raw HTTP vs pylance.

1. A k=10 vector query on 100k rows x 128-d, brute force and IVF_PQ, three ways,
   interleaved: ``tbl.search(v).limit(10).to_pandas()``; the same JSON body sent with
   requests and decoded with pyarrow (+ to_pandas); pylance in-process on the same files.
2. PERFORMANCE_NOTES' bulk read: half the rows of the 100k table (``id % 2 = 0``) into
   polars, ``tbl.to_polars(filter=...)`` and the query builder vs pylance + ``pl.from_arrow``.
3. Reading 1,000,000 rows (id, text, 128-d vector) into polars and pandas with
   ``tbl.to_polars()`` / ``tbl.to_pandas()`` vs pylance ``to_table()`` in-process.

The server runs in its own process (``benchmarks/_common.serve_in_subprocess``).
Run: ``.venv/bin/python benchmarks/bench_client.py [--query-rows N] [--read-rows N]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import lance
import numpy as np
import polars as pl
import pyarrow as pa
import requests
from _common import (
    DIM,
    Timing,
    batches,
    print_table,
    schema,
    serve_in_subprocess,
    write_results,
)

import nsframe


def load(conn: nsframe.Connection, name: str, rows: int) -> nsframe.Table:
    conn.create_namespace("bench", exist_ok=True)
    reader = pa.RecordBatchReader.from_batches(schema(), batches(rows))
    tbl = conn.create_table(f"bench${name}", schema=schema())
    tbl.insert(reader)
    return tbl


def interleave(cases: dict[str, Callable[[], Any]], runs: int, warmup: int = 5
               ) -> dict[str, Timing]:
    timings = {name: Timing(name) for name in cases}
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    for _ in range(runs):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            timings[name].seconds.append(time.perf_counter() - start)
    return timings


def query_cases(url: str, tbl: nsframe.Table, ds: lance.LanceDataset,
                vectors: np.ndarray[Any, Any], indexed: bool) -> dict[str, Callable[[], Any]]:
    counter = {"i": 0}
    session = requests.Session()
    query_url = f"{url}/v1/table/bench%24{tbl.name}/query"

    def vec() -> np.ndarray[Any, Any]:
        counter["i"] += 1
        row: np.ndarray[Any, Any] = vectors[counter["i"] % len(vectors)]
        return row

    def client() -> Any:
        return tbl.search(vec()).limit(10).to_pandas()

    def raw() -> Any:
        body = {"vector": {"single_vector": vec().tolist()}, "k": 10}
        resp = session.post(query_url, data=json.dumps(body),
                            headers={"Content-Type": "application/json"})
        resp.raise_for_status()
        return pa.ipc.open_file(pa.py_buffer(resp.content)).read_all().to_pandas()

    def direct() -> Any:
        nearest = {"column": "vector", "q": vec(), "k": 10, "use_index": indexed}
        return ds.to_table(nearest=nearest).to_pandas()

    return {"nsframe .to_pandas()": client, "raw requests+pyarrow": raw, "pylance direct": direct}


def report(title: str, timings: dict[str, Timing], baseline: str) -> list[dict[str, Any]]:
    base = timings[baseline].median
    rows = [[t.name, t.median * 1e3, t.p99 * 1e3, t.median / base] for t in timings.values()]
    print(f"\n{title}")
    print_table(["path", "p50 ms", "p99 ms", "ratio to direct"], rows)
    return [{**t.summary(), "ratio_to_direct": t.median / base} for t in timings.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--query-rows", type=int, default=100_000)
    parser.add_argument("--read-rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--read-runs", type=int, default=5)
    parser.add_argument("--half-runs", type=int, default=30)
    args = parser.parse_args()
    results: dict[str, Any] = {"query_rows": args.query_rows, "read_rows": args.read_rows,
                               "dim": DIM}
    rng = np.random.default_rng(7)
    vectors = rng.random((64, DIM), dtype=np.float32)

    with serve_in_subprocess() as server, nsframe.connect(server.url) as conn:
        def dataset(name: str) -> lance.LanceDataset:
            return lance.dataset(conn.client.describe_table(f"bench${name}")["location"])

        tbl = load(conn, "q", args.query_rows)
        ds = dataset("q")
        timings = interleave(query_cases(server.url, tbl, ds, vectors, False), args.runs)
        results["query_brute_force"] = report(
            f"k=10 vector query, brute force, {args.query_rows:,} rows x {DIM}-d",
            timings, "pylance direct")

        started = time.perf_counter()
        tbl.create_index("vector", "IVF_PQ", num_partitions=64, num_sub_vectors=16)
        results["index_build_s"] = time.perf_counter() - started
        ds = dataset("q")
        timings = interleave(query_cases(server.url, tbl, ds, vectors, True), args.runs)
        results["query_ivf_pq"] = report(
            f"k=10 vector query, IVF_PQ (64 partitions, 16 sub-vectors), {args.query_rows:,} rows",
            timings, "pylance direct")

        half = "id % 2 = 0"
        half_cases: dict[str, Callable[[], Any]] = {
            "nsframe tbl.to_polars(filter=)": lambda: tbl.to_polars(filter=half),
            "nsframe query().where().to_polars()": lambda: tbl.query().where(half).to_polars(),
            "pylance to_table(filter=) -> polars": lambda: pl.from_arrow(ds.to_table(filter=half)),
        }
        timings = interleave(half_cases, args.half_runs, warmup=2)
        results["half_read"] = report(
            f"Reading 50% of {args.query_rows:,} rows into polars ({half})",
            timings, "pylance to_table(filter=) -> polars")

        big = load(conn, "read", args.read_rows)
        ds = dataset("read")
        session = requests.Session()

        def raw_read() -> Any:
            resp = session.post(f"{server.url}/v1/table/bench%24read/query",
                                data=json.dumps({"vector": {}, "k": 0}),
                                headers={"Content-Type": "application/json"}, stream=True)
            resp.raise_for_status()
            return pa.ipc.open_file(pa.py_buffer(resp.raw.read())).read_all()

        read_cases: dict[str, Callable[[], Any]] = {
            "raw requests k=0 + pyarrow": raw_read,
            "nsframe .to_polars()": lambda: big.to_polars(),
            "nsframe .to_pandas()": lambda: big.to_pandas(),
            "nsframe .to_arrow()": lambda: big.to_arrow(),
            "pylance to_table()": lambda: ds.to_table(),
            "pylance to_table().to_pandas()": lambda: ds.to_table().to_pandas(),
        }
        timings = interleave(read_cases, args.read_runs, warmup=1)
        results["bulk_read"] = report(
            f"Reading {args.read_rows:,} rows (id, text, {DIM}-d vector)",
            timings, "pylance to_table()")
    path = write_results("client", results)
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
