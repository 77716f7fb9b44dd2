"""Query latency: through the nsframe server over HTTP vs the same query in-process with pylance.

The table has (int64 id, string text, fixed_size_list<float32>[128] vector) rows, an
IVF_PQ index on the vector and an FTS index on the text. Four queries, each run the
same way on both paths and interleaved in every round so that drift hits both alike:

- ``vector-flat``: k=10 nearest neighbours by brute force (the index bypassed);
- ``vector-ivfpq``: k=10 through the IVF_PQ index;
- ``full-text``: k=10 BM25 matches of one word, through the FTS index;
- ``filter-scan``: every row with ``id % 100 = 7`` (1% of the table), all columns.

``server`` is one keep-alive `requests` session posting the JSON body and decoding the
Arrow IPC file with pyarrow; ``direct`` is `LanceDataset.to_table` on a dataset opened
once in this process. The server runs in a child process.

    .venv/bin/python benchmarks/bench_query.py             # 100,000 rows, 200 rounds
    .venv/bin/python benchmarks/bench_query.py --quick     # 20,000 rows, 40 rounds
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import requests
from lance.query import MatchQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DIM,
    IpcStreamBody,
    Timing,
    batches,
    print_table,
    schema,
    serve_in_subprocess,
    write_results,
)

WORDS = ["apple", "banana", "cherry", "river", "mountain", "quick", "brown", "fox", "lazy",
         "dog", "ocean", "forest", "silver", "garden", "thunder", "candle", "marble", "violet",
         "harbor", "lantern", "meadow", "copper", "falcon", "orchid"]
NAMESPACE, TABLE = "bench", "docs"
TABLE_ID = f"{NAMESPACE}${TABLE}"
PQ = {"num_partitions": 64, "num_sub_vectors": 16}


@dataclass
class Options:
    rows: int
    rounds: int
    warmup: int


def worded(source: Iterator[pa.RecordBatch], seed: int = 7) -> Iterator[pa.RecordBatch]:
    """Replace the generated text by six random words per row, so BM25 has work to do."""
    rng = np.random.default_rng(seed)
    words = np.array(WORDS)
    for batch in source:
        picks = words[rng.integers(0, len(words), size=(batch.num_rows, 6))]
        text = pa.array([" ".join(row) for row in picks.tolist()])
        yield pa.record_batch([batch.column(0), text, batch.column(2)], schema=batch.schema)


def load(http: requests.Session, url: str, rows: int) -> None:
    ok(http.post(f"{url}/v1/namespace/{NAMESPACE}/create", json={}))
    body = IpcStreamBody(worded(batches(rows)), schema())
    ok(http.post(f"{url}/v1/table/{TABLE_ID}/create", data=body,
                 headers={"Content-Type": "application/vnd.apache.arrow.stream"}))
    started = time.perf_counter()
    ok(http.post(f"{url}/v1/table/{TABLE_ID}/create_index",
                 json={"column": "vector", "index_type": "IVF_PQ", **PQ}))
    ok(http.post(f"{url}/v1/table/{TABLE_ID}/create_scalar_index",
                 json={"column": "text", "index_type": "FTS"}))
    print(f"indexes built in {time.perf_counter() - started:.1f}s")


def ok(resp: requests.Response) -> Any:
    if resp.status_code != 200:
        raise RuntimeError(f"{resp.request.method} {resp.url}: {resp.status_code} {resp.text}")
    return resp.json() if resp.content else None


@dataclass
class Case:
    name: str
    body: Callable[[np.ndarray, str], dict[str, Any]]
    direct: Callable[[lance.LanceDataset, np.ndarray, str], pa.Table]


CASES = [
    Case("vector-flat",
         lambda q, w: {"vector": {"single_vector": q.tolist()}, "k": 10,
                       "bypass_vector_index": True},
         lambda ds, q, w: ds.to_table(nearest={"column": "vector", "q": q, "k": 10,
                                               "use_index": False})),
    Case("vector-ivfpq",
         lambda q, w: {"vector": {"single_vector": q.tolist()}, "k": 10},
         lambda ds, q, w: ds.to_table(nearest={"column": "vector", "q": q, "k": 10})),
    Case("full-text",
         lambda q, w: {"full_text_query": {"string_query": {"query": w, "columns": ["text"]}},
                       "k": 10},
         lambda ds, q, w: ds.to_table(full_text_query=MatchQuery(w, "text"), limit=10)),
    Case("filter-scan",
         lambda q, w: {"filter": "id % 100 = 7"},
         lambda ds, q, w: ds.to_table(filter="id % 100 = 7")),
]


def run(options: Options) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    queries = rng.random((options.rounds + options.warmup, DIM), dtype=np.float32)
    words = [WORDS[i % len(WORDS)] for i in range(len(queries))]
    with serve_in_subprocess() as server, requests.Session() as http:
        load(http, server.url, options.rows)
        uri = server.root / "namespaces" / NAMESPACE / "tables" / f"{TABLE}.lance"
        ds = lance.dataset(str(uri))
        timings = {(c.name, path): Timing(f"{c.name}/{path}")
                   for c in CASES for path in ("direct", "server")}
        rows: dict[str, tuple[int, int]] = {}
        for i, (q, word) in enumerate(zip(queries, words, strict=True)):
            for case in CASES:
                started = time.perf_counter()
                direct = case.direct(ds, q, word)
                direct_s = time.perf_counter() - started
                started = time.perf_counter()
                resp = http.post(f"{server.url}/v1/table/{TABLE_ID}/query",
                                 json=case.body(q, word))
                served = pa.ipc.open_file(pa.BufferReader(resp.content)).read_all()
                server_s = time.perf_counter() - started
                if resp.status_code != 200:
                    raise RuntimeError(resp.text)
                rows[case.name] = (direct.num_rows, served.num_rows)
                if i >= options.warmup:
                    timings[(case.name, "direct")].seconds.append(direct_s)
                    timings[(case.name, "server")].seconds.append(server_s)
    report(timings, rows)
    return {"rows": options.rows, "rounds": options.rounds, "index": PQ,
            "timings": [t.summary() for t in timings.values()],
            "result_rows": {k: list(v) for k, v in rows.items()}}


def report(timings: dict[tuple[str, str], Timing], rows: dict[str, tuple[int, int]]) -> None:
    table = []
    for case in CASES:
        direct, server = timings[(case.name, "direct")], timings[(case.name, "server")]
        table.append([
            case.name, rows[case.name][1],
            direct.median * 1e3, direct.p99 * 1e3, server.median * 1e3, server.p99 * 1e3,
            server.median / direct.median, server.p99 / direct.p99,
        ])
    print_table(["query", "rows", "direct p50 ms", "direct p99 ms", "server p50 ms",
                 "server p99 ms", "ratio p50", "ratio p99"], table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=None, help="table size (default 100,000)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 200)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 40 rounds")
    args = parser.parse_args(argv)
    options = Options(
        rows=args.rows or (20_000 if args.quick else 100_000),
        rounds=args.rounds or (40 if args.quick else 200),
        warmup=5 if args.quick else 20,
    )
    results = run(options)
    print(f"results: {write_results('query', results)}")


if __name__ == "__main__":
    main()
