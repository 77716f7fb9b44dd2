"""The frame boundary: ``nsframe._frames.to_pandas(table)`` against pyarrow's own
``table.to_pandas()`` (with and without nullable ``types_mapper``) of the same table.

Shapes (all single-chunk unless named ``chunked``):

- ``issue``: the issue's k=10 result (int64 id, string text, 128-d vector, float32
  ``_distance``; no nulls, no pandas metadata);
- ``arrow``: a query result of a table written from Arrow (no pandas metadata): int64 id,
  string text (a tenth null), 128-d float32 vector, float64 score (a tenth null), float32
  ``_distance``;
- ``pandas``: the same result of a table written from a pandas frame, so it carries
  pyarrow's pandas metadata (with nsframe's additions): int64 id, nullable ``Int64``,
  ``str``, a categorical, tz-aware timestamps, the vector, and the undescribed
  ``_distance`` a query adds;
- sizes: 10 rows, 10,000 rows (also in 1,000-row chunks), and 1,000,000 rows without
  the vector column (also in 8,192-row chunks, as a scan answers).

``main`` is `to_pandas` as it is on the ``main`` branch (``git show main:...``, loaded
as a module of its own), so the before and after figures come from one run; each output
is checked equal (values and dtypes) to ``main``'s. Cases are interleaved, their order
rotating. Each sample is the mean of a batch of calls, in wall time and in this process's
CPU time (less sensitive to a busy machine); medians of the samples are shown.

    .venv/bin/python benchmarks/bench_frames.py             # all sizes
    .venv/bin/python benchmarks/bench_frames.py --quick     # fewer samples, 100k not 1M
    .venv/bin/python benchmarks/bench_frames.py --profile   # cProfile of the small cases
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DIM, median, print_table, write_results

from nsframe import _frames

ROOT = Path(__file__).resolve().parent.parent


def baseline_module(revision: str) -> ModuleType | None:
    """``nsframe/_frames.py`` at ``revision``, imported as a module of its own."""
    try:
        source = subprocess.run(["git", "show", f"{revision}:nsframe/_frames.py"], cwd=ROOT,
                                check=True, capture_output=True, text=True).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    path = Path(tempfile.mkdtemp(prefix="nsframe-bench-")) / "frames_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("frames_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def arrow_result(rows: int, vectors: bool = True) -> pa.Table:
    rng = np.random.default_rng(rows)
    ids = np.arange(rows, dtype=np.int64)
    nulls = ids % 10 == 3
    columns: dict[str, Any] = {
        "id": ids,
        "text": pa.array([f"document number {i}" for i in range(rows)], pa.string(),
                         mask=nulls),
    }
    if vectors:
        values = pa.array(rng.random(rows * DIM, dtype=np.float32))
        columns["vector"] = pa.FixedSizeListArray.from_arrays(values, DIM)
    columns["score"] = pa.array(rng.random(rows), pa.float64(), mask=nulls)
    columns["_distance"] = pa.array(rng.random(rows, dtype=np.float32))
    return pa.table(columns)


def issue_result(rows: int) -> pa.Table:
    """The issue's k=10 result: id, text, vector, ``_distance``, no nulls, no metadata."""
    rng = np.random.default_rng(rows)
    return pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "text": pa.array([f"document number {i}" for i in range(rows)], pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(rows * DIM, dtype=np.float32)), DIM),
        "_distance": pa.array(rng.random(rows, dtype=np.float32)),
    })


def pandas_result(rows: int, vectors: bool = True) -> pa.Table:
    """What a query answers on a table written from a pandas frame: nsframe's own
    conversion (`to_source`), plus the ``_distance`` column the metadata does not know."""
    rng = np.random.default_rng(rows)
    ids = np.arange(rows, dtype=np.int64)
    frame = pd.DataFrame({
        "id": ids,
        "count": pd.array(np.where(ids % 10 == 3, None, ids), dtype="Int64"),
        "text": pd.Series([f"document number {i}" for i in range(rows)], dtype="str"),
        "kind": pd.Categorical(np.array(["a", "b", "c"])[ids % 3], categories=["c", "b", "a"]),
        "at": pd.date_range("2024-01-01", periods=rows, freq="s", tz="Europe/Paris"),
    })
    if vectors:
        frame["vector"] = list(rng.random((rows, DIM), dtype=np.float32))
    source = _frames.to_source(frame)
    table = pa.Table.from_batches(list(source.batches), schema=source.schema)
    table = table.append_column("_distance", pa.array(rng.random(rows, dtype=np.float32)))
    return table.combine_chunks()


def chunked(table: pa.Table, rows: int = 8192) -> pa.Table:
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows))


def shapes(quick: bool) -> dict[str, tuple[pa.Table, int]]:
    """name -> (table, calls per sample)."""
    large = 100_000 if quick else 1_000_000
    out: dict[str, tuple[pa.Table, int]] = {"issue 10": (issue_result(10), 200)}
    for kind, make in (("arrow", arrow_result), ("pandas", pandas_result)):
        out[f"{kind} 10"] = (make(10), 200)
        out[f"{kind} 10k"] = (make(10_000), 5)
        out[f"{kind} 10k chunked"] = (chunked(make(10_000), 1000), 5)
        big = make(large, vectors=False)
        out[f"{kind} {large // 1000}k no-vec"] = (big, 1)
        out[f"{kind} {large // 1000}k no-vec chunked"] = (chunked(big), 1)
    return out


def cases(table: pa.Table, main: ModuleType | None) -> dict[str, Callable[[], Any]]:
    mapper = _frames._nullable_mapper(pd)
    found: dict[str, Callable[[], Any]] = {
        "pyarrow": table.to_pandas,
        "pyarrow+mapper": lambda: table.to_pandas(types_mapper=mapper),
        "nsframe": lambda: _frames.to_pandas(table),
    }
    if main is not None:
        found["main"] = lambda: main.to_pandas(table)
    return found


def check_same(table: pa.Table, main: ModuleType | None) -> None:
    if main is None:
        return
    for backend in _frames.PANDAS_BACKENDS:
        got = _frames.to_pandas(table, dtype_backend=backend)
        want = main.to_pandas(table, dtype_backend=backend)
        assert list(got.dtypes) == list(want.dtypes), (backend, got.dtypes, want.dtypes)
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def sample(run: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per call. On a shared machine other processes inflate wall
    time far more than this process's CPU time; but pyarrow converts large tables on
    several threads, whose CPU time adds up beyond the wall time. Both are kept."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        run()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def measure(table: pa.Table, calls: int, samples: int,
            main: ModuleType | None) -> dict[str, dict[str, list[float]]]:
    """case -> {"wall": [...], "cpu": [...]} seconds per call, one value per sample."""
    runs = cases(table, main)
    for run in runs.values():
        run()  # warm-up: caches, first-call imports
    times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in runs}
    names = list(runs)
    for attempt in range(samples):
        shift = attempt % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = sample(runs[name], calls)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return times


def profile(table: pa.Table, run: Callable[[pa.Table], Any], label: str) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2000):
        run(table)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    print(f"\n--- cProfile, 2,000 calls: {label}")
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--profile", action="store_true")
    opts = parser.parse_args()
    samples = opts.samples or (7 if opts.quick else 21)
    main_module = baseline_module(opts.baseline)
    if main_module is None:
        print(f"(no baseline: git show {opts.baseline} failed)")
    tables = shapes(opts.quick)
    if opts.profile:
        for name in ("issue 10", "pandas 10"):
            table = tables[name][0]
            if main_module is not None:
                profile(table, main_module.to_pandas, f"{name}, {opts.baseline}")
            profile(table, _frames.to_pandas, f"{name}, this checkout")
        return
    rows: dict[str, list[list[object]]] = {"wall": [], "cpu": []}
    results: dict[str, Any] = {}
    for name, (table, calls) in tables.items():
        check_same(table, main_module)
        times = measure(table, calls, samples if calls > 1 else max(3, samples // 3),
                        main_module)
        results[name] = {"rows": table.num_rows, "chunks": table.column(0).num_chunks,
                         "calls_per_sample": calls, "seconds": times}
        for clock, out in rows.items():
            ms = {case: median(t[clock]) * 1e3 for case, t in times.items()}
            base = ms["pyarrow"]
            out.append([name, base, ms["pyarrow+mapper"] / base,
                        *([ms["main"], ms["main"] / base] if "main" in ms else ["-", "-"]),
                        ms["nsframe"], ms["nsframe"] / base])
            results[name][f"median_{clock}_ms"] = ms
    for clock, out in rows.items():
        print(f"\n{clock} time per call (median); x = ratio to pyarrow's table.to_pandas()")
        print_table(["shape", "pyarrow ms", "+mapper x", f"{opts.baseline} ms",
                     f"{opts.baseline} x", "nsframe ms", "nsframe x"], out)
    path = write_results("frames", {"samples": samples, "shapes": results})
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
