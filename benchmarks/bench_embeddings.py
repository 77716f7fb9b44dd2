"""Embeddings per second through nsframe's insert vs the model called directly.

``direct`` calls the packaged all-MiniLM-L6-v2 (``nsframe[embed]``) on the texts, as a user
would before inserting; ``insert`` is ``tbl.add(frame_without_vectors)`` into a table
whose embedding function is that model, so nsframe embeds (batches, Arrow columns) and
sends the rows to a server in a child process. Both on the same texts, interleaved in each
repeat; the ratio of the medians is nsframe's overhead (target <= 1.1x).

Then a 50,000-row insert without vectors, with its progress bar (to stderr): by default
with the model-free ``nsframe-hashing`` function, since the model runs at tens to a few
hundred texts a second on a small CPU; ``--progress-model`` uses the model there too.

    .venv/bin/python benchmarks/bench_embeddings.py              # 1,000 texts, 5 repeats
    .venv/bin/python benchmarks/bench_embeddings.py --quick      # 300 texts
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Timing, cpu_seconds, print_table, serve_in_subprocess, write_results

import nsframe
from nsframe.datasets import _model, load_sample
from nsframe.embeddings import get_registry


def texts(rows: int) -> list[str]:
    corpus = load_sample().column("text").to_pylist()
    return list(itertools.islice(itertools.cycle(corpus), rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="texts per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="300 texts")
    parser.add_argument("--progress-rows", type=int, default=50_000)
    parser.add_argument("--progress-model", action="store_true",
                        help="embed the progress run with the model (slow on a small CPU)")
    args = parser.parse_args()
    rows = 300 if args.quick else args.rows
    sample = texts(rows)
    _model.encode(sample[:8])  # load the model and warm it up before any timing
    direct, through = Timing("direct model.encode"), Timing("nsframe insert")
    results: dict[str, Any] = {"rows": rows}
    with serve_in_subprocess() as server, nsframe.connect(server.url) as conn:
        func = get_registry().get("sentence-transformers").create()
        # CPU seconds too (this process: the model runs here; plus the server's for the
        # insert): on a shared machine they move far less than wall time.
        direct_cpu, through_cpu = Timing("direct model.encode"), Timing("nsframe insert")

        def run_direct() -> None:
            cpu, started = cpu_seconds(), time.perf_counter()
            _model.encode(sample, batch_size=64)
            direct.seconds.append(time.perf_counter() - started)
            direct_cpu.seconds.append(cpu_seconds() - cpu)

        def run_insert() -> None:
            tbl = conn.create_table(f"bench_{uuid.uuid4().hex[:8]}",
                                    pd.DataFrame({"id": [0], "text": ["warm"]}),
                                    embedding=func)
            frame = pd.DataFrame({"id": range(1, rows + 1), "text": sample})
            cpu = cpu_seconds() + cpu_seconds(server.pid, children=True)
            started = time.perf_counter()
            tbl.add(frame, progress=False)
            through.seconds.append(time.perf_counter() - started)
            through_cpu.seconds.append(cpu_seconds() + cpu_seconds(server.pid, children=True)
                                       - cpu)
            assert tbl.count_rows() == rows + 1

        for repeat in range(args.repeats):
            # Alternate which goes first, so a change in the machine's load hits both.
            for run in (run_direct, run_insert) if repeat % 2 == 0 else (run_insert, run_direct):
                run()
        ratio = through.median / direct.median
        cpu_ratio = through_cpu.median / direct_cpu.median
        print_table(["", "median s", "min s", "texts/s (median)", "median CPU s"],
                    [[t.name, t.median, min(t.seconds), rows / t.median, c.median]
                     for t, c in ((direct, direct_cpu), (through, through_cpu))])
        print(f"overhead: insert / direct = {ratio:.3f}x by median wall time, "
              f"{min(through.seconds) / min(direct.seconds):.3f}x by minima, "
              f"{cpu_ratio:.3f}x by median CPU time (target <= 1.1x)\n")
        results.update(direct=direct.summary(), insert=through.summary(), ratio=ratio,
                       direct_cpu=direct_cpu.summary(), insert_cpu=through_cpu.summary(),
                       cpu_ratio=cpu_ratio)

        name = "sentence-transformers" if args.progress_model else "nsframe-hashing"
        big = get_registry().get(name).create()
        tbl = conn.create_table(f"progress_{uuid.uuid4().hex[:8]}",
                                pd.DataFrame({"id": [0], "text": ["warm"]}), embedding=big)
        frame = pd.DataFrame({"id": range(1, args.progress_rows + 1),
                              "text": texts(args.progress_rows)})
        print(f"{args.progress_rows:,} rows without vectors, embedded by {name!r}:",
              flush=True)
        started = time.perf_counter()
        tbl.add(frame, progress=True)
        seconds = time.perf_counter() - started
        print(f"{args.progress_rows:,} rows in {seconds:.1f} s "
              f"({args.progress_rows / seconds:,.0f} rows/s)")
        results["progress_run"] = {"function": name, "rows": args.progress_rows,
                                   "seconds": seconds}
    print(f"results: {write_results('bench_embeddings', results)}")


if __name__ == "__main__":
    main()
