"""`create_index()` with no arguments on 384-d vectors: what it chose, and its recall@10.

For each size (1k, 50k and 1M rows by default), the table is made through nsframe's
embedded connection, indexed with ``create_index()`` and nothing else, and 50 queries are
answered twice: with the index at the query's defaults, and by brute force
(``bypass_vector_index``). Recall@10 is the share of the brute-force top 10 that the
indexed search finds. The vectors are a mixture of Gaussian clusters (about 200 rows
each), as embeddings of real text cluster; uniform noise has no neighbours worth finding.

    .venv/bin/python benchmarks/bench_index_defaults.py [--sizes 1000 50000 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

import nsframe

DIM = 384
QUERIES = 50
# About 200 rows a cluster: each query has real neighbours, as embeddings of text do.
ROWS_PER_CLUSTER = 200


def centres(rows: int) -> np.ndarray:
    """The cluster centres of a ``rows``-row table: one per ROWS_PER_CLUSTER rows."""
    count = max(5, rows // ROWS_PER_CLUSTER)
    return np.random.default_rng(0).normal(size=(count, DIM)).astype(np.float32)


def clustered(rows: int, points: np.ndarray, seed: int = 1,
              batch: int = 50_000) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        picks = rng.integers(0, len(points), n)
        vectors = points[picks] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
        yield pa.record_batch({
            "id": pa.array(np.arange(start, start + n)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        })


def measure(rows: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder, nsframe.connect(folder) as conn:
        points = centres(rows)
        batches = clustered(rows, points)
        first = next(batches)
        table = conn.create_table("wide", first)
        for more in batches:
            table.add(more)
        started = time.perf_counter()
        built = table.create_index()
        seconds = time.perf_counter() - started
        stats = table.index_stats(built.name)
        queries = next(clustered(QUERIES, points, seed=2)).column("vector").to_numpy(
            zero_copy_only=False)
        found = 0
        for query in queries:
            exact = set(table.search(query).bypass_vector_index().limit(10)
                        .to_arrow().column("id").to_pylist())
            got = set(table.search(query).limit(10).to_arrow().column("id").to_pylist())
            found += len(exact & got)
        return {"rows": rows, "index": built.index_type, "build_s": round(seconds, 1),
                "num_partitions": stats.get("num_partitions"),
                "num_sub_vectors": DIM // 16, "recall@10": round(found / (10 * QUERIES), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 50_000, 1_000_000])
    args = parser.parse_args()
    for rows in args.sizes:
        print(measure(rows), flush=True)


if __name__ == "__main__":
    main()
