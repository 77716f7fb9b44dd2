"""Start-up time of ``nsframe serve`` on roots of 10 and 10,000 tables (issue 27).

Start-up collects what crashed servers left (`nsframe.server._storage.gc`), which reads
every table's versions. It used to run before the server answered; it now runs in a
thread beside serving (`_storage.startup`). Timed here, on the same local roots in one
run, each a median of ``--repeat``:

- *first answer*: from spawning ``nsframe serve`` to its first 200 (a namespace exists);
- *collection*: one full `gc.collect` of the root, in process: what start-up used to
  wait for before its first answer, and now does in the background.

    .venv/bin/python benchmarks/bench_startup.py [--tables 10,10000] [--repeat 3]

Tables are made in process through the catalog's own create path (one row each, spread
over ten namespaces): about 40 s for 10,000.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import free_port, median, print_table, write_results

from nsframe.server._storage import gc
from nsframe.server._storage.catalog import Catalog
from nsframe.server._storage.writes import create_table

NAMESPACES = 10
REPO = Path(__file__).resolve().parents[1]


class _OneRow:
    """A one-row table as an incoming stream (`writes.IncomingBatches`)."""

    schema = pa.schema([("id", pa.int64())])
    num_rows = 1
    error: Exception | None = None

    def is_empty(self) -> bool:
        return False

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(
            self.schema, [pa.record_batch([pa.array([1])], schema=self.schema)])


def make_root(folder: Path, tables: int) -> None:
    catalog = Catalog(folder)
    try:
        for n in range(NAMESPACES):
            catalog.create_namespace([f"ns{n}"], "Create", {})
        for t in range(tables):
            parts = [f"ns{t % NAMESPACES}", f"t{t}"]
            create_table(catalog, parts, _OneRow(), label="$".join(parts), previous=None,
                         properties={})
    finally:
        catalog.close()


def first_answer(root: Path) -> float:
    """Seconds from spawning ``nsframe serve`` to its first 200."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "nsframe._cli", "serve", str(root),
                             "--port", str(port), "--log-level", "warning"], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                resp = requests.post(f"http://127.0.0.1:{port}/v1/namespace/ns0/exists",
                                     json={}, timeout=5)
                if resp.status_code == 200:
                    return time.perf_counter() - started
            except requests.ConnectionError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"nsframe serve exited with {proc.returncode}")
            time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(60)


def collection(root: Path) -> float:
    catalog = Catalog(root)
    try:
        started = time.perf_counter()
        gc.collect(catalog, dry_run=True)
        return time.perf_counter() - started
    finally:
        catalog.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="10,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: list[list[object]] = []
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for tables in [int(t) for t in args.tables.split(",")]:
            root = Path(tmp) / f"root-{tables}"
            made = time.perf_counter()
            make_root(root, tables)
            print(f"made {tables} tables in {time.perf_counter() - made:.1f} s", flush=True)
            answers, collections = [], []
            for _ in range(args.repeat):  # interleaved
                answers.append(first_answer(root))
                collections.append(collection(root))
            answer, collect = median(answers), median(collections)
            rows.append([tables, f"{answer:.2f}", f"{collect:.2f}",
                         f"{answer + collect:.2f}", f"{(answer + collect) / answer:.1f}x"])
            results[str(tables)] = {"first_answer_s": answer, "collection_s": collect,
                                    "answers_s": answers, "collections_s": collections}
    print_table(["tables", "first answer s", "collection s (now in background)",
                 "first answer before s", "sooner"], rows)
    write_results("startup", results)


if __name__ == "__main__":
    main()
