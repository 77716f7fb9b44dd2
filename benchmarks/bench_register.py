"""The cost of register's ownership checks as the catalog grows (docs/storage.md, Ownership).

A register reads the whole catalog twice (one listing per namespace, each time: before
and after it files its entry) to find overlapping folders; a table lookup, which every
request does, reads one entry. Both are timed on one local root holding ``--tables``
tables spread over ten namespaces (catalog entries: declared tables cost the checks what
created ones do), interleaved, and the ratio printed. Also timed: a register into a root
with no other table, the floor.

    .venv/bin/python benchmarks/bench_register.py [--tables 0,100,1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import lance
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, print_table, write_results

from nsframe.server._storage import registry
from nsframe.server._storage.catalog import Catalog

NAMESPACES = 10


def root_with(tables: int, folder: Path) -> Catalog:
    catalog = Catalog(folder)
    for n in range(NAMESPACES):
        catalog.create_namespace([f"ns{n}"], "Create", {})
    for t in range(tables):
        catalog.declare_table([f"ns{t % NAMESPACES}", f"t{t}"], {})
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), folder / "ext" / "data.lance")
    return catalog


def register_once(catalog: Catalog) -> float:
    """Seconds of one register (location check, ownership checks, filing), then undone."""
    started = time.perf_counter()
    key = registry.location_key(catalog, "ext/data.lance")
    ref = registry.register_table(catalog, ["ns0", "reg"], key, overwrite=False,
                                  properties={})
    elapsed = time.perf_counter() - started
    registry.deregister_table(catalog, ref)
    return elapsed


def lookup_once(catalog: Catalog) -> float:
    started = time.perf_counter()
    catalog.find_table(["ns1", "t1"])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="0,100,1000")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rows = []
    results = {}
    for tables in [int(t) for t in args.tables.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            catalog = root_with(tables, Path(tmp))
            registers, lookups = [], []
            for _ in range(args.repeat):
                registers.append(register_once(catalog))
                lookups.append(lookup_once(catalog))
            catalog.close()
        reg, look = median(registers), median(lookups)
        rows.append([tables, reg * 1000, look * 1000, reg / look])
        results[str(tables)] = {"register_s": registers, "lookup_s": lookups}
    print_table(["tables", "register ms", "lookup ms", "ratio"], rows)
    print(f"results: {write_results('register', results)}")


if __name__ == "__main__":
    main()
