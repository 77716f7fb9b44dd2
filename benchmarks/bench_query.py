"""Query latency: through the nsframe server over HTTP vs the same query in-process with pylance.

The table has (int64 id, string text, fixed_size_list<float32>[128] vector) rows, an
IVF_PQ index on the vector and an FTS index on the text. Four queries, each run the
same way on both paths and interleaved in every round so that drift hits both alike:

- ``vector-flat``: k=10 nearest neighbours by brute force (the index bypassed);
- ``vector-ivfpq``: k=10 through the IVF_PQ index;
- ``full-text``: k=10 BM25 matches of one word, through the FTS index;
- ``filter-scan``: every row with ``id % 100 = 7`` (1% of the table), all columns.

Then ``--clients`` (4) concurrent clients run ``vector-ivfpq`` queries back to back for
``--seconds`` each, alternating the paths (three slots each): queries per second, median
of the slots. ``direct``, ``server`` and ``reference`` clients are threads of this
process; ``*-processes`` clients are processes, so they do not share one GIL. Every
HTTP client has its own session.

``server`` is one keep-alive `requests` session posting the JSON body and decoding the
Arrow IPC file with pyarrow; ``direct`` is `LanceDataset.to_table` on a dataset opened
once in this process; ``reference`` is the same HTTP request to pylance's reference server
(`lance.namespace.RestAdapter`) reading the very same files. Both servers run in child
processes.

    .venv/bin/python benchmarks/bench_query.py             # 100,000 rows, 200 rounds
    .venv/bin/python benchmarks/bench_query.py --quick     # 20,000 rows, 40 rounds, 2 s slots
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
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
    median,
    print_table,
    reference_in_subprocess,
    schema,
    serve_in_subprocess,
    threads_qps,
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
    clients: int = 4
    seconds: float = 5.0


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


def upstream_body(body: dict[str, Any], rows: int) -> dict[str, Any]:
    """The reference server wants `vector` and `k` in every query (upstream marks them
    required); `k` = the table size asks for every match, as no `k` does on ours."""
    return {"vector": {}, "k": rows, **body}


def post_query(http: requests.Session, url: str, table_id: str,
               body: dict[str, Any]) -> pa.Table:
    resp = http.post(f"{url}/v1/table/{table_id}/query", json=body)
    if resp.status_code != 200:
        raise RuntimeError(f"{url}: {resp.status_code} {resp.text}")
    return pa.ipc.open_file(pa.BufferReader(resp.content)).read_all()


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
        # The catalog names each table's data folder; describe says where it is.
        uri = Path(ok(http.post(f"{server.url}/v1/table/{TABLE_ID}/describe",
                                json={}))["location"])
        ds = lance.dataset(str(uri))
        timings = {(c.name, path): Timing(f"{c.name}/{path}")
                   for c in CASES for path in PATHS}
        rows: dict[str, tuple[int, ...]] = {}
        with reference_in_subprocess({TABLE: uri}) as reference:
            for i, (q, word) in enumerate(zip(queries, words, strict=True)):
                for case in CASES:
                    body = case.body(q, word)
                    runs: dict[str, Callable[[], pa.Table]] = {
                        "direct": partial(case.direct, ds, q, word),
                        "server": partial(post_query, http, server.url, TABLE_ID, body),
                        "reference": partial(post_query, http, reference.url, TABLE,
                                             upstream_body(body, options.rows)),
                    }
                    counts = []
                    for path, query in runs.items():
                        started = time.perf_counter()
                        counts.append(query().num_rows)
                        if i >= options.warmup:
                            timings[(case.name, path)].seconds.append(
                                time.perf_counter() - started)
                    rows[case.name] = tuple(counts)
            qps = concurrent(options, ds, server.url, reference.url, queries)
    report(timings, rows)
    report_qps(options, qps)
    return {"rows": options.rows, "rounds": options.rounds, "index": PQ,
            "timings": [t.summary() for t in timings.values()],
            "result_rows": {k: list(v) for k, v in rows.items()},
            "concurrent": {"clients": options.clients, "seconds": options.seconds,
                           "qps": qps}}


# ------------------------------------------------------------ concurrent clients
Query = Callable[[np.ndarray], int]
PATHS = ("direct", "server", "reference")


def _direct_client(ds: lance.LanceDataset) -> Callable[[], Query]:
    def make() -> Query:
        return lambda q: ds.to_table(nearest={"column": "vector", "q": q, "k": 10}).num_rows
    return make


def _http_client(url: str, table_id: str) -> Callable[[], Query]:
    def make() -> Query:
        http = requests.Session()

        def run(q: np.ndarray) -> int:
            body = {"vector": {"single_vector": q.tolist()}, "k": 10}
            return int(post_query(http, url, table_id, body).num_rows)
        return run
    return make


def qps_slot(make: Callable[[], Query], clients: int, seconds: float,
             queries: np.ndarray) -> float:
    """Queries per second of ``clients`` threads, each querying back to back."""
    def indexed() -> Callable[[int], object]:
        run = make()
        return lambda n: run(queries[n % len(queries)])
    return threads_qps(indexed, clients, seconds)


def _process_client(url: str, table_id: str, queries: np.ndarray, seconds: float,
                    index: int, clients: int, ready: Any, start: Any, counts: Any) -> None:
    """One client process: its own session, querying back to back once ``start`` is set."""
    run = _http_client(url, table_id)()
    run(queries[index])  # connect before the clock starts
    ready.release()
    start.wait()
    deadline = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < deadline:
        run(queries[(n * clients + index) % len(queries)])
        n += 1
    counts[index] = n


def qps_processes(url: str, table_id: str, clients: int, seconds: float,
                  queries: np.ndarray) -> float:
    """Queries per second of ``clients`` client processes (no client-side GIL to share)."""
    context = multiprocessing.get_context("spawn")
    start, ready = context.Event(), context.Semaphore(0)
    counts = context.Array("l", clients)
    procs = [context.Process(target=_process_client,
                             args=(url, table_id, queries[:256], seconds, i, clients, ready,
                                   start, counts))
             for i in range(clients)]
    for proc in procs:
        proc.start()
    for _ in procs:  # all imported and connected
        if not ready.acquire(timeout=120):
            raise RuntimeError("a client process did not start")
    began = time.perf_counter()
    start.set()
    for proc in procs:
        proc.join()
        if proc.exitcode:
            raise RuntimeError(f"a client process failed with exit code {proc.exitcode}")
    total: int = sum(counts[i] for i in range(clients))
    return total / (time.perf_counter() - began)


def concurrent(options: Options, ds: lance.LanceDataset, url: str, reference_url: str,
               queries: np.ndarray) -> dict[str, list[float]]:
    servers = {"server": (url, TABLE_ID), "reference": (reference_url, TABLE)}
    makers = {"direct": _direct_client(ds),
              **{name: _http_client(*where) for name, where in servers.items()}}
    qps: dict[str, list[float]] = {
        name: [] for name in [*makers, *(f"{name}-processes" for name in servers)]}
    for make in makers.values():  # warm-up, not counted
        qps_slot(make, options.clients, min(1.0, options.seconds), queries)
    for _ in range(3):
        for name, make in makers.items():
            qps[name].append(qps_slot(make, options.clients, options.seconds, queries))
        for name, where in servers.items():
            qps[f"{name}-processes"].append(
                qps_processes(*where, options.clients, options.seconds, queries))
    return qps


def report_qps(options: Options, qps: dict[str, list[float]]) -> None:
    direct = median(qps["direct"])
    print(f"\n{options.clients} concurrent clients, vector-ivfpq, {options.seconds:g} s slots "
          "(client threads; *-processes: client processes)")
    print_table(["path", "QPS (median)", "slots", "ratio to direct"],
                [[name, median(values), ", ".join(f"{v:.0f}" for v in values),
                  median(values) / direct] for name, values in qps.items()])


def report(timings: dict[tuple[str, str], Timing], rows: dict[str, tuple[int, ...]]) -> None:
    """Latency per query and path, and each server's ratio to direct (p50 and p99)."""
    table = []
    for case in CASES:
        direct = timings[(case.name, "direct")]
        for path in PATHS:
            t = timings[(case.name, path)]
            table.append([
                case.name, path, rows[case.name][PATHS.index(path)],
                t.median * 1e3, t.p99 * 1e3, t.median / direct.median, t.p99 / direct.p99,
            ])
    print_table(["query", "path", "rows", "p50 ms", "p99 ms", "ratio p50", "ratio p99"],
                table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=None, help="table size (default 100,000)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 200)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 40 rounds")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (4)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="length of one concurrent slot (default 5, quick 2)")
    args = parser.parse_args(argv)
    options = Options(
        rows=args.rows or (20_000 if args.quick else 100_000),
        rounds=args.rounds or (40 if args.quick else 200),
        warmup=5 if args.quick else 20,
        clients=args.clients,
        seconds=args.seconds or (2.0 if args.quick else 5.0),
    )
    results = run(options)
    print(f"results: {write_results('query', results)}")


if __name__ == "__main__":
    main()
