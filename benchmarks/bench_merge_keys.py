"""What unique keys cost a merge_insert: a table with a declared primary key (Lance's
commit check) against one without (merges take turns in the store), and in-process
pylance's merge on the same kind of table as the floor.

Single-row upserts of new ids, one after another (latency) and from 4 threads at once
(merges per second), against `nsframe serve` in a child process over a local root. The
cases are interleaved in each round so that drift hits them alike.

    .venv/bin/python benchmarks/bench_merge_keys.py            # 60 upserts a case
    .venv/bin/python benchmarks/bench_merge_keys.py --quick    # 20
    .venv/bin/python benchmarks/bench_merge_keys.py --code ../main   # serve another checkout
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import lance
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Timing, print_table, serve_in_subprocess, write_results

import nsframe

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
THREADS = 4


def row(key: int) -> pa.Table:
    return pa.table({"id": [key], "v": [f"r{key}"]}, schema=SCHEMA)


def upsert(tbl: nsframe.Table, key: int) -> None:
    tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(row(key))


def concurrent_rate(tbl: nsframe.Table, per_thread: int, base: int) -> float:
    """Merges per second of THREADS threads upserting new ids back to back."""
    barrier = threading.Barrier(THREADS + 1)

    def work(t: int) -> None:
        barrier.wait()
        for k in range(per_thread):
            upsert(tbl, base + t * per_thread + k)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return THREADS * per_thread / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--code", help="serve the nsframe of this checkout (an A/B baseline)")
    args = parser.parse_args()
    count = 20 if args.quick else 60
    with tempfile.TemporaryDirectory() as folder, \
            serve_in_subprocess(folder, code=args.code) as server:
        conn = nsframe.connect(server.url)
        keyed = conn.create_table("keyed", row(0), primary_key="id")
        keyless = conn.create_table("keyless", row(0))
        direct = lance.write_dataset(row(0), str(Path(folder, "direct.lance")))
        timings = {name: Timing(name) for name in ("keyed", "keyless", "pylance")}
        for key in range(1, count + 1):
            for name in timings:  # interleaved
                start = time.perf_counter()
                if name == "pylance":
                    direct.merge_insert("id").when_matched_update_all() \
                        .when_not_matched_insert_all().execute(row(key))
                else:
                    upsert(keyed if name == "keyed" else keyless, key)
                timings[name].seconds.append(time.perf_counter() - start)
        rates = {"keyed": [], "keyless": []}  # type: dict[str, list[float]]
        for r in range(3):
            for name, tbl in (("keyed", keyed), ("keyless", keyless)):
                rates[name].append(concurrent_rate(tbl, count // THREADS,
                                                   10_000 * (r + 1)))
        conn.close()
    floor = timings["pylance"].median
    print_table(
        ["case", "median ms", "p99 ms", "x pylance", f"merges/s, {THREADS} threads"],
        [[name, t.median * 1e3, t.p99 * 1e3, t.median / floor,
          max(rates[name]) if name in rates else "-"] for name, t in timings.items()],
    )
    ratio = timings["keyless"].median / timings["keyed"].median
    print(f"keyless / keyed median latency: {ratio:.2f}x")
    write_results("merge_keys", {"timings": [t.summary() for t in timings.values()],
                                 "rates": rates, "keyless_over_keyed": ratio})


if __name__ == "__main__":
    main()
