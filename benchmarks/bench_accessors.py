"""``df.ns.insert`` of a pandas and a polars frame vs `lance.write_dataset` in-process.

Rows are (int64 id, string text, 128-d float32 vector). The pandas frame holds its
vectors as numpy arrays in an object column (what embedding code produces), the polars
frame as an ``Array(Float32, 128)`` column; ``direct`` writes the same rows, already an
Arrow table, with `lance.write_dataset` in this process (the limit). The three are
interleaved in each repeat. The server runs in a child process, so the client's peak
resident memory (sampled every 10 ms) is the client's alone.

    .venv/bin/python benchmarks/bench_accessors.py            # 1,000,000 rows, 3 repeats
    .venv/bin/python benchmarks/bench_accessors.py --quick    # 100,000 rows
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DIM,
    RssSampler,
    Timing,
    mib,
    print_table,
    serve_in_subprocess,
    settle,
    write_results,
)

import nsframe
from nsframe._upload import DEFAULT_CHUNK_BYTES


def make_data(rows: int, seed: int = 7) -> tuple[pa.Table, pd.DataFrame, pl.DataFrame]:
    matrix = np.random.default_rng(seed).random((rows, DIM), dtype=np.float32)
    ids = np.arange(rows, dtype=np.int64)
    text = [f"document number {i}" for i in range(rows)]
    arrow = pa.table({
        "id": ids,
        "text": pa.array(text, pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), DIM),
    })
    frame = pd.DataFrame({"id": ids, "text": pd.Series(text, dtype="str"),
                          "vector": list(matrix)})
    polars = pl.DataFrame({"id": ids, "text": text,
                           "vector": pl.Series(matrix, dtype=pl.Array(pl.Float32, DIM))})
    return arrow, frame, polars


class Bench:
    def __init__(self, rows: int, workdir: Path, conn: nsframe.Connection,
                 chunk_size: int) -> None:
        self.arrow, self.pandas, self.polars = make_data(rows)
        self.rows = rows
        self.workdir = workdir
        self.conn = conn
        self.chunk_size = chunk_size

    def direct(self) -> float:
        uri = self.workdir / f"direct-{uuid.uuid4().hex[:8]}.lance"
        # Batches of 8k rows: Lance's best case (one giant batch writes slower).
        reader = pa.RecordBatchReader.from_batches(
            self.arrow.schema, self.arrow.to_batches(max_chunksize=8192))
        started = time.perf_counter()
        ds = lance.write_dataset(reader, uri)
        seconds = time.perf_counter() - started
        assert ds.count_rows() == self.rows
        shutil.rmtree(uri)
        return seconds

    def _through(self, frame: Any) -> float:
        ident = f"bench$t{uuid.uuid4().hex[:8]}"
        # An empty table first (not timed), so that what is timed is `df.ns.insert` alone,
        # the call users make over and over into a table that exists.
        tbl = self.conn.create_table(ident, schema=self.arrow.schema)
        started = time.perf_counter()
        frame.ns.insert(ident, conn=self.conn, chunk_size=self.chunk_size, progress=False)
        seconds = time.perf_counter() - started
        assert tbl.count_rows() == self.rows
        assert tbl.schema.field("vector").type == pa.list_(pa.float32(), DIM)
        self.conn.drop_table(ident)
        return seconds

    def pandas_insert(self) -> float:
        return self._through(self.pandas)

    def polars_insert(self) -> float:
        return self._through(self.polars)


def run(rows: int, repeat: int, chunk_size: int, workdir: Path) -> dict[str, Any]:
    with serve_in_subprocess(workdir / "server") as server, \
            nsframe.connect(server.url) as conn:
        conn.create_namespace("bench")
        bench = Bench(rows, workdir, conn, chunk_size)
        modes: dict[str, Callable[[], float]] = {
            "direct (lance.write_dataset)": bench.direct,
            "pandas df.ns.insert": bench.pandas_insert,
            "polars df.ns.insert": bench.polars_insert,
        }
        warm = Bench(2_000, workdir, conn, chunk_size)
        for warm_up in (warm.direct, warm.pandas_insert, warm.polars_insert):
            warm_up()
        timings = {mode: Timing(mode) for mode in modes}
        peaks: dict[str, list[int]] = {mode: [] for mode in modes}
        gc.collect()
        baseline = RssSampler(os.getpid())
        with baseline:
            time.sleep(0.05)
        for attempt in range(repeat):
            # Each repeat starts with another mode, so that order effects even out.
            order = list(modes.items())
            order = order[attempt % len(order):] + order[:attempt % len(order)]
            for mode, insert in order:
                settle()
                with RssSampler(os.getpid()) as rss:
                    seconds = insert()
                timings[mode].seconds.append(seconds)
                peaks[mode].append(rss.peak)
                print(f"  repeat {attempt + 1}/{repeat} {mode:<30} {seconds:7.2f} s",
                      file=sys.stderr)
        data_mib = mib(bench.arrow.nbytes)
    direct = timings["direct (lance.write_dataset)"].median
    results: dict[str, Any] = {
        "benchmark": "accessors", "rows": rows, "repeat": repeat, "dim": DIM,
        "chunk_size_mib": mib(chunk_size), "arrow_data_mib": data_mib,
        "client_rss_before_mib": mib(baseline.peak),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "modes": {},
    }
    for mode, timing in timings.items():
        results["modes"][mode] = {
            **timing.summary(),
            "rows_per_s": rows / timing.median,
            "mib_per_s": data_mib / timing.median,
            "ratio_to_direct": timing.median / direct,
            "client_peak_rss_mib": mib(max(peaks[mode])),
            "client_growth_mib": mib(max(peaks[mode]) - baseline.peak),
        }
    return results


def report(results: dict[str, Any]) -> None:
    print(f"\nInsert {results['rows']:,} rows (int64, string, float32[{results['dim']}]), "
          f"{results['arrow_data_mib']:,.0f} MiB of Arrow data; median of {results['repeat']}; "
          f"chunk_size {results['chunk_size_mib']:,.0f} MiB\n")
    rows = [[mode, m["median_s"], m["p99_s"], m["rows_per_s"], m["mib_per_s"],
             f"{m['ratio_to_direct']:.2f}x", m["client_peak_rss_mib"], m["client_growth_mib"]]
            for mode, m in results["modes"].items()]
    print_table(["mode", "median s", "p99 s", "rows/s", "MiB/s", "vs direct",
                 "client peak MiB", "client growth MiB"], rows)
    print(f"\nclient RSS before the runs (data held): {results['client_rss_before_mib']:,.0f} MiB;"
          f" load average at the end: {results['load_average']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunk-mib", type=int, default=DEFAULT_CHUNK_BYTES >> 20)
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    args = parser.parse_args()
    rows = 100_000 if args.quick else args.rows
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-") as scratch:
        results = run(rows, args.repeat, args.chunk_mib << 20, Path(scratch))
    report(results)
    print(f"saved {write_results('accessors', results)}")


if __name__ == "__main__":
    main()
