"""`create_index()` with no arguments on 384-d vectors: what it chose, and its recall@10.

For each size (1k, 50k and 1M rows by default), the table is made through nsframe's
embedded connection, indexed with ``create_index()`` and nothing else, and 50 queries are
answered twice: with the index at the query's defaults, and by brute force
(``bypass_vector_index``). Recall@10 is the share of the brute-force top 10 that the
indexed search finds. The vectors lie near a 32-dimensional subspace, with a little noise
in every dimension, as embeddings of text do.

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
# Embeddings of text vary along far fewer directions than they have dimensions; points
# drawn uniformly in 384 dimensions are all about as far from each other, so no index
# (nor any user) could tell their neighbours apart.
LATENT = 32
NOISE = 0.1


def basis() -> np.ndarray:
    """A fixed map from LATENT to DIM dimensions: the data lies near a low-rank subspace."""
    return np.random.default_rng(0).normal(size=(LATENT, DIM)).astype(np.float32)


def embeddings(rows: int, seed: int, batch: int = 50_000) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    projection = basis()
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        latent = rng.normal(size=(n, LATENT)).astype(np.float32)
        vectors = latent @ projection + NOISE * rng.normal(size=(n, DIM)).astype(np.float32)
        yield pa.record_batch({
            "id": pa.array(np.arange(start, start + n)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        })


def measure(rows: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder, nsframe.connect(folder) as conn:
        batches = embeddings(rows, seed=1)
        first = next(batches)
        table = conn.create_table("wide", first)
        for more in batches:
            table.add(more)
        started = time.perf_counter()
        built = table.create_index()
        seconds = time.perf_counter() - started
        stats = table.index_stats(built.name)
        queries = next(embeddings(QUERIES, seed=2)).column("vector").to_numpy(
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
