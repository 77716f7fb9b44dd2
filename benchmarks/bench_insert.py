"""Insert throughput: through the nsframe server over HTTP vs `lance.write_dataset` in-process.

Rows are (int64 id, string text, fixed_size_list<float32>[128] vector). Four ways in,
interleaved in each repeat so that drift between runs hits all of them alike:

- ``direct``: `lance.write_dataset(reader, uri, mode="append")` in this process (the limit);
- ``http-stream``: one insert request whose Arrow IPC stream body is serialised batch by
  batch while it is sent (chunked transfer encoding);
- ``http-chunked``: several insert requests of ``--chunk-rows`` rows each, on one
  keep-alive session;
- ``reference``: the same rows into pylance's reference server
  (`lance.namespace.RestAdapter`), which refuses bodies over 2 MiB, so in as many requests
  of just under 2 MiB as that takes (the alternative users have today).

The servers run in child processes (`nsframe serve`), so that their resident memory can
be sampled apart from the client's.

    .venv/bin/python benchmarks/bench_insert.py            # 1,000,000 rows, 3 repeats
    .venv/bin/python benchmarks/bench_insert.py --quick    # 100,000 rows
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    BATCH_ROWS,
    IpcStreamBody,
    RssSampler,
    ServerProcess,
    Timing,
    batches,
    cpu_seconds,
    ipc_nbytes,
    median,
    mib,
    percentile,
    print_table,
    reference_in_subprocess,
    schema,
    serve_in_subprocess,
    settle,
    write_results,
)

ARROW_STREAM = {"Content-Type": "application/vnd.apache.arrow.stream"}
# The reference server's body limit (PERFORMANCE_NOTES.md): its requests stay under it.
REFERENCE_BODY_BYTES = 2 << 20


@dataclass
class Options:
    rows: int
    repeat: int
    chunk_rows: int
    batch_rows: int
    workdir: Path
    own_workdir: bool = False
    baseline: Path | None = None


@dataclass
class Run:
    """One timed insert of all rows."""

    seconds: float
    client_cpu: float
    server_cpu: float = 0.0
    peak_rss: int | None = None
    request_seconds: list[float] | None = None


# ---------------------------------------------------------------------- the three ways in
def insert_direct(opts: Options, _server: ServerProcess) -> Run:
    uri = opts.workdir / f"direct-{uuid.uuid4().hex[:8]}.lance"
    lance.write_dataset(schema().empty_table(), uri)
    reader = pa.RecordBatchReader.from_batches(schema(), batches(opts.rows,
                                                                 batch_rows=opts.batch_rows))
    cpu = cpu_seconds()
    started = time.perf_counter()
    ds = lance.write_dataset(reader, uri, mode="append")
    seconds = time.perf_counter() - started
    cpu = cpu_seconds() - cpu
    _expect(ds.count_rows(), opts.rows, "direct")
    shutil.rmtree(uri)
    return Run(seconds, cpu)


def insert_http_stream(opts: Options, server: ServerProcess) -> Run:
    with FreshTable(server) as (session, table_url):
        body = IpcStreamBody(batches(opts.rows, batch_rows=opts.batch_rows), schema())
        with RssSampler(server.pid) as rss, CpuMeter(server.pid) as cpu:
            started = time.perf_counter()
            resp = session.post(f"{table_url}/insert", data=body, headers=ARROW_STREAM)
            seconds = time.perf_counter() - started
        _check(resp)
        _expect(resp.json()["num_inserted_rows"], opts.rows, "http-stream")
        _expect(_count(session, table_url), opts.rows, "http-stream count_rows")
    return Run(seconds, cpu.client, cpu.server, rss.peak)


def insert_http_chunked(opts: Options, server: ServerProcess) -> Run:
    return _insert_in_requests(opts, server, opts.chunk_rows)


def insert_reference(opts: Options, server: ServerProcess) -> Run:
    per_row = ipc_nbytes(opts.batch_rows, batch_rows=opts.batch_rows) / opts.batch_rows
    # 5% of room for the schema message and the batch framing.
    # It refuses to create a table from an empty stream, so its first request creates the
    # table with the first rows (timed like the rest) and the others insert.
    return _insert_in_requests(opts, server, int(0.95 * REFERENCE_BODY_BYTES / per_row),
                               create_with_first=True)


def _insert_in_requests(opts: Options, server: ServerProcess, chunk_rows: int,
                        create_with_first: bool = False) -> Run:
    latencies: list[float] = []
    batch_rows = min(opts.batch_rows, chunk_rows)
    with FreshTable(server, create=not create_with_first) as (session, table_url):
        with RssSampler(server.pid) as rss, CpuMeter(server.pid) as cpu:
            started = time.perf_counter()
            for first in range(0, opts.rows, chunk_rows):
                n = min(chunk_rows, opts.rows - first)
                body = IpcStreamBody(batches(n, start=first, batch_rows=batch_rows), schema())
                operation = "create" if create_with_first and first == 0 else "insert"
                sent = time.perf_counter()
                resp = session.post(f"{table_url}/{operation}", data=body,
                                    headers=ARROW_STREAM)
                latencies.append(time.perf_counter() - sent)
                _check(resp)
            seconds = time.perf_counter() - started
        _expect(_count(session, table_url), opts.rows, f"{chunk_rows}-row requests count_rows")
    return Run(seconds, cpu.client, cpu.server, rss.peak, latencies)


class CpuMeter:
    """CPU seconds this process and the server spend inside the ``with`` block."""

    def __init__(self, server_pid: int) -> None:
        self._server_pid = server_pid
        self.client = self.server = 0.0

    def __enter__(self) -> CpuMeter:
        self.client, self.server = -cpu_seconds(), -cpu_seconds(self._server_pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client += cpu_seconds()
        self.server += cpu_seconds(self._server_pid)


class FreshTable:
    """An empty table of the benchmark schema on the server (unless ``create`` is false:
    the caller creates it); dropped on exit."""

    def __init__(self, server: ServerProcess, create: bool = True) -> None:
        self._server = server
        self._create = create
        self._session = requests.Session()
        self._url = f"{server.url}/v1/table/bench${uuid.uuid4().hex[:8]}"

    def __enter__(self) -> tuple[requests.Session, str]:
        if self._create:
            empty = IpcStreamBody([], schema())
            _check(self._session.post(f"{self._url}/create", data=empty, headers=ARROW_STREAM))
        return self._session, self._url

    def __exit__(self, *exc: object) -> None:
        self._session.post(f"{self._url}/drop", json={})
        self._session.close()


def _count(session: requests.Session, table_url: str) -> int:
    resp = session.post(f"{table_url}/count_rows", json={})
    _check(resp)
    answer = resp.json()
    # The contract answers a bare number; the reference server {"count": n}.
    count: int = answer["count"] if isinstance(answer, dict) else answer
    return count


def _check(resp: requests.Response) -> None:
    if not 200 <= resp.status_code < 300:  # the reference server answers creates with 201
        raise RuntimeError(f"{resp.request.method} {resp.url} -> {resp.status_code}: {resp.text}")


def _expect(got: int, want: int, what: str) -> None:
    if got != want:
        raise RuntimeError(f"{what}: {got} rows, expected {want}")


MODES: dict[str, Callable[[Options, ServerProcess], Run]] = {
    "direct": insert_direct,
    "http-stream": insert_http_stream,
    "http-chunked": insert_http_chunked,
    "reference": insert_reference,
}


# ---------------------------------------------------------------------- the benchmark
def run(opts: Options) -> dict[str, Any]:
    payload = ipc_nbytes(opts.rows, batch_rows=opts.batch_rows)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serve_in_subprocess(opts.workdir / "server"))
        reference = stack.enter_context(reference_in_subprocess({}))
        cases = [(mode, insert, reference if mode == "reference" else server)
                 for mode, insert in MODES.items()]
        if opts.baseline is not None:
            # The same HTTP modes against a copy of the old code, interleaved: an A/B.
            base = stack.enter_context(serve_in_subprocess(opts.workdir / "baseline",
                                                           code=opts.baseline))
            cases += [(f"{mode} (base)", insert, base)
                      for mode, insert in MODES.items() if mode.startswith("http")]
        runs: dict[str, list[Run]] = {mode: [] for mode, _, _ in cases}
        for srv in {id(s): s for _, _, s in cases}.values():
            requests.post(f"{srv.url}/v1/namespace/bench/create", json={})
        # Warm up both sides (imports, first write) before anything is timed.
        warm = Options(2 * opts.batch_rows, 1, opts.batch_rows, opts.batch_rows, opts.workdir)
        for _, insert, srv in cases:
            insert(warm, srv)
        idle_rss = {mode: srv.rss() for mode, _, srv in cases}
        for repeat in range(opts.repeat):
            for mode, insert, srv in cases:
                settle()
                result = insert(opts, srv)
                runs[mode].append(result)
                print(f"  repeat {repeat + 1}/{opts.repeat} {mode:<13} {result.seconds:7.2f} s",
                      file=sys.stderr)
    return _summarise(opts, payload, idle_rss, runs)


def _summarise(opts: Options, payload: int, idle_rss: dict[str, int],
               runs: dict[str, list[Run]]) -> dict[str, Any]:
    direct = Timing("direct", [r.seconds for r in runs["direct"]]).median
    modes: dict[str, Any] = {}
    for mode, results in runs.items():
        timing = Timing(mode, [r.seconds for r in results])
        entry: dict[str, Any] = {
            **timing.summary(),
            "rows_per_s": opts.rows / timing.median,
            "mib_per_s": mib(payload) / timing.median,
            "ratio_to_direct": timing.median / direct,
            "client_cpu_s": median([r.client_cpu for r in results]),
            "server_cpu_s": median([r.server_cpu for r in results]),
        }
        peaks = [r.peak_rss for r in results if r.peak_rss is not None]
        if peaks:
            entry["server_peak_rss_mib"] = mib(max(peaks))
            entry["server_growth_over_idle_mib"] = mib(max(peaks) - idle_rss[mode])
        latencies = [s for r in results for s in (r.request_seconds or [])]
        if latencies:
            entry["request_median_s"] = percentile(latencies, 50)
            entry["request_p99_s"] = percentile(latencies, 99)
        modes[mode] = entry
    return {
        "benchmark": "insert",
        "rows": opts.rows,
        "repeat": opts.repeat,
        "chunk_rows": opts.chunk_rows,
        "batch_rows": opts.batch_rows,
        "ipc_payload_mib": mib(payload),
        "server_idle_rss_mib": mib(idle_rss["http-stream"]),
        # Other work on the machine skews wall times; CPU seconds suffer less.
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "modes": modes,
    }


def report(results: dict[str, Any]) -> None:
    print(f"\nInsert {results['rows']:,} rows (int64, string, float32[128]); "
          f"IPC payload {results['ipc_payload_mib']:,.0f} MiB; median of {results['repeat']}; "
          f"chunked = {results['chunk_rows']:,} rows per request\n")
    rows = []
    for mode, m in results["modes"].items():
        rows.append([
            mode, m["median_s"], m["min_s"], m["max_s"], m["rows_per_s"], m["mib_per_s"],
            f"{m['ratio_to_direct']:.2f}x", m["client_cpu_s"], m["server_cpu_s"],
            _whole(m.get("server_peak_rss_mib")), _whole(m.get("server_growth_over_idle_mib")),
        ])
    print_table(["mode", "median s", "min s", "max s", "rows/s", "MiB/s", "vs direct",
                 "cpu s (this proc)", "cpu s (server)", "srv peak MiB", "srv growth MiB"], rows)
    for mode in ("http-chunked", "reference"):
        chunked = results["modes"].get(mode, {})
        if "request_median_s" in chunked:
            print(f"\n{mode} per request: median {chunked['request_median_s'] * 1000:,.0f} ms, "
                  f"p99 {chunked['request_p99_s'] * 1000:,.0f} ms")
    print(f"server idle RSS: {results['server_idle_rss_mib']:,.0f} MiB; "
          f"load average at the end: {results['load_average']}")
    print("target (PERFORMANCE_NOTES.md): insert of 1M rows <= 1.3x direct")


def _whole(value: float | None) -> int | str:
    return "-" if value is None else round(value)


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows to insert (1,000,000)")
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each mode; median kept")
    parser.add_argument("--chunk-rows", type=int, default=100_000,
                        help="rows per request in http-chunked (100,000)")
    parser.add_argument("--batch-rows", type=int, default=BATCH_ROWS,
                        help=f"rows per Arrow record batch ({BATCH_ROWS})")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the datasets go (default: a temporary directory)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a directory holding an older copy of the nsframe package: its "
                        "server runs the HTTP modes too, interleaved (an A/B)")
    args = parser.parse_args(argv)
    rows = 100_000 if args.quick else args.rows
    if rows < 1 or args.repeat < 1 or args.chunk_rows < 1 or args.batch_rows < 1:
        parser.error("--rows, --repeat, --chunk-rows and --batch-rows must be at least 1")
    own = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="nsframe-bench-insert-")) if own else args.workdir
    return Options(rows, args.repeat, min(args.chunk_rows, rows), args.batch_rows, workdir, own,
                   args.baseline)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    try:
        results = run(opts)
    finally:
        if opts.own_workdir:
            shutil.rmtree(opts.workdir, ignore_errors=True)
    report(results)
    print(f"\nresults: {write_results('insert', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
