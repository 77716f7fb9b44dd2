"""The performance issue's table in one run: in-process pylance, nsframe through its own
client (over HTTP and embedded), and pylance's reference server, on the same files.

Every figure of one row is measured in the same run, interleaved (the order rotates each
round), so that the drift of a shared 2-core machine hits every path alike; ratios are to
in-process pylance (``direct``), or to LanceDB on a row that compares the two, and each
target of issue 26's "Done when" is marked met or NOT met.

Paths:

- ``direct``: pylance in this process on the table's own files (the limit);
- ``nsframe``: nsframe's client (``tbl.search(...).to_pandas()``, ``tbl.to_polars()``,
  ``df.ns.insert``) against ``nsframe serve`` in a child process;
- ``embedded``: the same client calls on ``nsframe.connect(root)``, the embedded default,
  serving the same root from this process;
- ``lancedb``: LanceDB 0.40 embedded (``lancedb.connect`` on the table's folder) on the
  same files, for issue 26's bounds of the embedded default (k=10 queries, count_rows);
- ``reference``: pylance's reference REST server (``lance.namespace.RestAdapter``) in a
  child process, over the same files, through ``requests`` (it has no client of its own).

Work (100,000 rows of id, six random words, 128-d float32 vector; IVF_PQ 64/16 and FTS):
k=10 full-text, IVF_PQ, IVF_PQ with a prefilter and brute-force queries into pandas;
count_rows;
queries per second of 16 and 4 client threads (IVF_PQ); half the rows with their vectors
into polars; ``df.ns.insert`` of a pandas frame (1,000,000 rows; ``--quick`` 100,000) with
the client's memory growth; a GET of an unknown route with ``requests`` and
``http.client``.

    .venv/bin/python benchmarks/bench_issue.py --quick     # about 5 minutes
    .venv/bin/python benchmarks/bench_issue.py             # the full table
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import http.client
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import requests
from lance.query import MatchQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DIM,
    IpcStreamBody,
    RssSampler,
    ServerProcess,
    cpu_seconds,
    ipc_nbytes,
    median,
    mib,
    print_table,
    reference_in_subprocess,
    serve_in_subprocess,
    settle,
    threads_qps,
    write_results,
)
from bench_query import TABLE, TABLE_ID, WORDS, load

import nsframe
from nsframe.transport import HTTPTransport

HALF = "id % 2 = 0"
ARROW_STREAM = {"Content-Type": "application/vnd.apache.arrow.stream"}
REFERENCE_BODY_BYTES = 2 << 20  # the reference server refuses larger bodies

Run = Callable[[], object]


@dataclass
class Options:
    quick: bool
    rows: int
    rounds: int
    seconds: float
    insert_rows: int
    repeat: int
    workers: int
    qps_workers: list[int]
    read_runs: int
    client_ab: bool
    sections: set[str]
    ab: set[str] = field(default_factory=set)


@dataclass
class Row:
    """One line of the issue's table: a figure per path, lower is better unless ``qps``."""

    work: str
    unit: str
    figures: dict[str, float]
    target: float | None = None
    target_path: str = "nsframe"
    qps: bool = False
    notes: dict[str, Any] = field(default_factory=dict)
    # The target bounds the figure itself (a share of memory), not a ratio to direct.
    absolute: bool = False
    # The path the target's ratio is to: pylance in process, or LanceDB embedded.
    versus: str = "direct"
    # The paths a row of a second target shows (the others print "-"); all when empty.
    only: tuple[str, ...] = ()

    def ratio(self, path: str, versus: str = "direct") -> float | None:
        base, value = self.figures.get(versus), self.figures.get(path)
        if base is None or value is None or base == 0:
            return None
        return value / base

    def met(self) -> str:
        if self.target is None:
            return "-"
        if self.absolute:
            value = self.figures.get(self.target_path)
            return "?" if value is None else "met" if value < self.target else "NOT met"
        ratio = self.ratio(self.target_path, self.versus)
        if ratio is None:
            return "?"
        good = ratio >= self.target if self.qps else ratio <= self.target
        return "met" if good else "NOT met"


# ---------------------------------------------------------------------- timing helpers
def interleaved(cases: dict[str, Run], rounds: int, warmup: int) -> dict[str, list[float]]:
    """Wall seconds of each case, run in turn each round, the order rotating."""
    names = list(cases)
    for _ in range(warmup):
        for name in names:
            cases[name]()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            cases[name]()
            seconds[name].append(time.perf_counter() - started)
    return seconds


# ---------------------------------------------------------------------- the bench
class Bench:
    def __init__(self, opts: Options, server: ServerProcess, reference: ServerProcess,
                 conn: nsframe.Connection, embedded: nsframe.Connection | None,
                 ds: lance.LanceDataset, lancedb_table: Any = None) -> None:
        self.opts = opts
        self.server = server
        self.reference = reference
        self.conn = conn
        self.embedded = embedded
        self.lancedb = lancedb_table  # LanceDB 0.40 embedded, on the same files
        self.ds = ds
        self.http = requests.Session()
        rng = np.random.default_rng(1)
        self.vectors = rng.random((256, DIM), dtype=np.float32)
        self.count = 0
        self.rows: list[Row] = []
        self.extra: dict[str, Any] = {}
        self.clients: dict[str, nsframe.Connection] = {"nsframe": conn}
        if embedded is not None:
            self.clients["embedded"] = embedded

    def _next(self) -> tuple[np.ndarray[Any, Any], str]:
        self.count += 1
        return self.vectors[self.count % len(self.vectors)], WORDS[self.count % len(WORDS)]

    def _reference_query(self, body: dict[str, Any]) -> pa.Table:
        # Upstream's schema requires `vector` and `k`: k = the table size asks for all.
        full = {"vector": {}, "k": self.opts.rows, **body}
        resp = self.http.post(f"{self.reference.url}/v1/table/{TABLE}/query", json=full)
        if resp.status_code != 200:
            raise RuntimeError(f"reference: {resp.status_code} {resp.text[:200]}")
        return pa.ipc.open_file(pa.py_buffer(resp.content)).read_all()

    # ------------------------------------------------------------------ k=10 latency
    def latency(self) -> None:
        ds = self.ds
        # work: (nsframe's client, pylance, the reference server's body, LanceDB,
        # issue 26's bound over HTTP, and whether its embedded bounds apply).
        kinds: dict[str, tuple[Callable[[Any, np.ndarray[Any, Any], str], Any],
                               Callable[[np.ndarray[Any, Any], str], Any],
                               Callable[[np.ndarray[Any, Any], str], dict[str, Any]],
                               Callable[[Any, np.ndarray[Any, Any], str], Any],
                               float | None, bool]] = {
            "full-text k=10": (
                lambda t, v, w: t.search(text=w, fts_columns=["text"]).limit(10),
                lambda v, w: ds.to_table(full_text_query=MatchQuery(w, "text"), limit=10),
                lambda v, w: {"full_text_query": {"string_query": {"query": w,
                                                                   "columns": ["text"]}},
                              "k": 10},
                lambda t, v, w: t.search(w, query_type="fts", fts_columns="text").limit(10),
                1.6, True,
            ),
            "IVF_PQ k=10": (
                lambda t, v, w: t.search(v).limit(10),
                lambda v, w: ds.to_table(nearest={"column": "vector", "q": v, "k": 10}),
                lambda v, w: {"vector": {"single_vector": v.tolist()}, "k": 10},
                lambda t, v, w: t.search(v).limit(10),
                1.4, True,
            ),
            "IVF_PQ + prefilter k=10": (
                lambda t, v, w: t.search(v).where(HALF, prefilter=True).limit(10),
                lambda v, w: ds.to_table(nearest={"column": "vector", "q": v, "k": 10},
                                         filter=HALF, prefilter=True),
                lambda v, w: {"vector": {"single_vector": v.tolist()}, "k": 10,
                              "filter": HALF, "prefilter": True},
                lambda t, v, w: t.search(v).where(HALF, prefilter=True).limit(10),
                None, True,
            ),
            "brute-force k=10": (
                lambda t, v, w: t.search(v).bypass_vector_index().limit(10),
                lambda v, w: ds.to_table(nearest={"column": "vector", "q": v, "k": 10,
                                                  "use_index": False}),
                lambda v, w: {"vector": {"single_vector": v.tolist()}, "k": 10,
                              "bypass_vector_index": True},
                lambda t, v, w: t.search(v).bypass_vector_index().limit(10),
                None, False,
            ),
        }
        tables = {name: conn.table(TABLE_ID) for name, conn in self.clients.items()}
        if self.lancedb is not None:
            tables["lancedb"] = self.lancedb
        for work, (client_query, direct, upstream, lancedb_query, over_http,
                   embedded_bounds) in kinds.items():
            v, w = self._next()
            queries = {name: lancedb_query if name == "lancedb" else client_query
                       for name in tables}
            cases: dict[str, Run] = {"direct": self._pandas(self._fresh(direct))}
            for name, tbl in tables.items():
                # The client's own to_pandas() (nsframe's dtypes; LanceDB's), as issue 26
                # measures it.
                cases[name] = self._bind(queries[name], tbl)
            cases["reference"] = self._pandas(self._upstream(upstream))
            # Every path answers the same rows count (a sanity check, not timed).
            counts = {n: len(self._same_query(n, queries.get(n, client_query), direct,
                                              upstream, tables, v, w))
                      for n in cases}
            times = interleaved(cases, self.opts.rounds, warmup=3)
            self._add(work, "ms", times, 1e3, target=over_http, notes={"rows": counts},
                      embedded_bounds=embedded_bounds)
            self._report_last()

    def count_rows(self) -> None:
        """count_rows: issue 26 bounds the embedded default by LanceDB's own."""
        cases: dict[str, Run] = {"direct": self.ds.count_rows}
        for name, conn in self.clients.items():
            cases[name] = conn.table(TABLE_ID).count_rows
        if self.lancedb is not None:
            cases["lancedb"] = self.lancedb.count_rows
        times = interleaved(cases, max(self.opts.rounds, 100), warmup=5)
        figures = {path: median(values) * 1e3 for path, values in times.items()}
        self.rows.append(Row("count_rows", "ms", figures))
        if "embedded" in figures and "lancedb" in figures:
            self.rows.append(Row("count_rows (embedded vs LanceDB)", "ms", figures, 1.0,
                                 target_path="embedded", versus="lancedb",
                                 only=("lancedb", "embedded")))
        self._report_last()

    def _bind(self, query: Callable[[Any, np.ndarray[Any, Any], str], Any],
              tbl: Any) -> Callable[[], Any]:
        return lambda: query(tbl, *self._next()).to_pandas()

    def _fresh(self, query: Callable[[np.ndarray[Any, Any], str], Any]) -> Callable[[], Any]:
        return lambda: query(*self._next())

    def _upstream(self, body: Callable[[np.ndarray[Any, Any], str], dict[str, Any]]
                  ) -> Callable[[], Any]:
        return lambda: self._reference_query(body(*self._next()))

    @staticmethod
    def _pandas(run: Callable[[], Any]) -> Run:
        return lambda: run().to_pandas()

    def _same_query(self, path: str, client_query: Any, direct: Any, upstream: Any,
                    tables: dict[str, Any], v: np.ndarray[Any, Any], w: str) -> pa.Table:
        if path == "direct":
            return direct(v, w)
        if path == "reference":
            return self._reference_query(upstream(v, w))
        return client_query(tables[path], v, w).to_arrow()

    def _add(self, work: str, unit: str, times: dict[str, list[float]], scale: float, *,
             target: float | None, notes: dict[str, Any] | None = None,
             embedded_bounds: bool = False) -> None:
        figures = {path: median(values) * scale for path, values in times.items()}
        self.rows.append(Row(work, unit, figures, target, notes=notes or {}))
        if embedded_bounds and "embedded" in figures:
            # Issue 26: <= 1.2x pylance, and at least 1.4x faster than LanceDB embedded.
            self.rows.append(Row(f"{work} (embedded)", unit, figures, 1.2,
                                 target_path="embedded", only=("direct", "embedded")))
            if "lancedb" in figures:
                self.rows.append(Row(f"{work} (embedded vs LanceDB)", unit, figures,
                                     round(1 / 1.4, 3), target_path="embedded",
                                     versus="lancedb", only=("lancedb", "embedded")))

    def _report_last(self) -> None:
        row = next(r for r in reversed(self.rows) if not r.only)
        shown = ", ".join(f"{p} {v:.2f}" + (f" ({row.ratio(p):.2f}x)" if p != "direct" else "")
                          for p, v in row.figures.items())
        print(f"  {row.work}: {shown} {row.unit}", file=sys.stderr)

    # ------------------------------------------------------------------ throughput
    def throughput(self) -> None:
        ds = self.ds
        vectors = self.vectors
        k10 = {"column": "vector", "k": 10}

        def direct() -> Callable[[int], object]:
            return lambda i: ds.to_table(nearest={**k10, "q": vectors[i % len(vectors)]})

        def client(tbl: Any) -> Callable[[], Callable[[int], object]]:
            return lambda: (lambda i: tbl.search(vectors[i % len(vectors)]).limit(10)
                            .to_arrow())

        def reference() -> Callable[[int], object]:
            session = requests.Session()
            url = f"{self.reference.url}/v1/table/{TABLE}/query"

            def run(i: int) -> object:
                body = {"vector": {"single_vector": vectors[i % len(vectors)].tolist()},
                        "k": 10}
                resp = session.post(url, json=body)
                return pa.ipc.open_file(pa.py_buffer(resp.content)).read_all()
            return run

        makers: dict[str, Callable[[], Callable[[int], object]]] = {"direct": direct}
        pids: dict[str, int] = {"reference": self.reference.pid}
        with contextlib.ExitStack() as stack:
            for workers in self.opts.qps_workers:
                name = f"nsframe ({workers} worker{'s' if workers > 1 else ''})"
                if workers == self.opts.workers:
                    server, conn = self.server, self.conn
                else:
                    server = stack.enter_context(serve_in_subprocess(
                        self.server.root, args=["--workers", str(workers)]))
                    conn = stack.enter_context(nsframe.connect(server.url))
                makers[name] = client(conn.table(TABLE_ID))
                pids[name] = server.pid
            makers["reference"] = reference
            for clients in (16, 4):
                for make in makers.values():  # warm-up: connections, caches
                    threads_qps(make, clients, 0.5)
                qps: dict[str, list[float]] = {name: [] for name in makers}
                cpu: dict[str, list[float]] = {name: [] for name in makers}
                for slot in range(3):
                    order = list(makers)
                    order = order[slot % len(order):] + order[:slot % len(order)]
                    for name in order:
                        before = cpu_seconds() + (cpu_seconds(pids[name], children=True)
                                                  if name in pids else 0.0)
                        rate = threads_qps(makers[name], clients, self.opts.seconds)
                        after = cpu_seconds() + (cpu_seconds(pids[name], children=True)
                                                 if name in pids else 0.0)
                        qps[name].append(rate)
                        cpu[name].append(1e3 * (after - before) / (rate * self.opts.seconds))
                figures = {name: median(values) for name, values in qps.items()}
                best = max((n for n in figures if n.startswith("nsframe")),
                           key=lambda n: figures[n])
                figures_row = {"direct": figures["direct"], "nsframe": figures[best],
                               "reference": figures["reference"]}
                self.rows.append(Row(f"QPS, {clients} client threads, IVF_PQ", "QPS",
                                     figures_row, 0.9 if clients == 16 else None, qps=True,
                                     notes={"paths": figures, "best": best,
                                            "cpu_ms_per_query": {n: median(c)
                                                                 for n, c in cpu.items()},
                                            "slots": qps}))
                cpu_text = ", ".join(f"{n} {median(c):.1f}" for n, c in cpu.items())
                print(f"  QPS {clients} threads: "
                      + ", ".join(f"{n} {v:.0f}" for n, v in figures.items())
                      + f"; CPU ms/query (client+server): {cpu_text}", file=sys.stderr)

    # ------------------------------------------------------------------ bulk read
    def bulk_read(self) -> None:
        ds = self.ds
        cases: dict[str, Run] = {"direct": lambda: pl.from_arrow(ds.to_table(filter=HALF))}
        for name, conn in self.clients.items():
            cases[name] = functools.partial(conn.table(TABLE_ID).to_polars, filter=HALF)
        cases["reference"] = lambda: pl.from_arrow(self._reference_query({"filter": HALF}))
        times = interleaved(cases, self.opts.read_runs, warmup=2)
        self._add("bulk read, 50% of rows with vectors, into polars", "s", times, 1.0,
                  target=1.25)
        self._report_last()

    # ------------------------------------------------------------------ insert
    def insert(self, workdir: Path) -> None:
        rows = self.opts.insert_rows
        arrow, frame = insert_data(rows)
        frame_bytes = int(arrow.nbytes)
        ref_session = requests.Session()

        def direct() -> None:
            uri = workdir / f"direct-{uuid.uuid4().hex[:8]}.lance"
            reader = pa.RecordBatchReader.from_batches(arrow.schema,
                                                       arrow.to_batches(max_chunksize=8192))
            lance.write_dataset(reader, uri)
            shutil.rmtree(uri)

        def direct_from_frame() -> None:
            # What a pylance user with the same pandas frame runs: the frame's conversion
            # to Arrow is part of the work, as it is for df.ns.insert.
            uri = workdir / f"direct-{uuid.uuid4().hex[:8]}.lance"
            lance.write_dataset(frame, uri, schema=arrow.schema)
            shutil.rmtree(uri)

        def through(conn: nsframe.Connection) -> Callable[[], None]:
            def run() -> None:
                frame.ns.insert(tables[id(conn)], conn=conn, progress=False)
            return run

        per_row = ipc_nbytes(8192) / 8192
        chunk_rows = int(0.95 * REFERENCE_BODY_BYTES / per_row)

        def reference() -> None:
            name = f"t{uuid.uuid4().hex[:8]}"
            url = f"{self.reference.url}/v1/table/{name}"
            for first in range(0, rows, chunk_rows):
                part = arrow.slice(first, chunk_rows)
                body = IpcStreamBody(part.to_batches(max_chunksize=8192), arrow.schema)
                op = "create" if first == 0 else "insert"
                resp = ref_session.post(f"{url}/{op}", data=body, headers=ARROW_STREAM)
                if resp.status_code >= 300:
                    raise RuntimeError(f"reference {op}: {resp.status_code} {resp.text[:200]}")
            shutil.rmtree(self.reference.root / f"{name}.lance", ignore_errors=True)

        tables: dict[int, str] = {}
        in_process_growth: list[int] = []
        cases: dict[str, Run] = {"direct": direct, "nsframe": through(self.conn),
                                 "reference": reference, "direct-frame": direct_from_frame}
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        pids = {"nsframe": self.server.pid, "reference": self.reference.pid}
        # The client's memory is measured in a process of its own that does nothing else,
        # so that what this one did before (queries, threads, the other paths' writes)
        # does not count; the timed runs below are in this process.
        growth = [client_growth(self.server.url, rows)]
        for attempt in range(self.opts.repeat + 1):
            order = list(cases)
            order = order[attempt % len(order):] + order[:attempt % len(order)]
            for name in order:
                # An empty table first (not timed): df.ns.insert is the call users repeat.
                ident = f"bench$ins{uuid.uuid4().hex[:8]}"
                self.conn.create_table(ident, schema=arrow.schema)
                tables[id(self.conn)] = ident
                settle()
                before = cpu_seconds() + (cpu_seconds(pids[name], children=True)
                                          if name in pids else 0.0)
                with RssSampler(os.getpid()) as rss:
                    baseline = rss.peak
                    started = time.perf_counter()
                    cases[name]()
                    seconds = time.perf_counter() - started
                after = cpu_seconds() + (cpu_seconds(pids[name], children=True)
                                         if name in pids else 0.0)
                self.conn.drop_table(ident)
                if attempt == 0:
                    continue  # warm-up
                times[name].append(seconds)
                cpu[name].append(after - before)
                if name == "nsframe":
                    in_process_growth.append(rss.peak - baseline)
                print(f"    insert {name}: {seconds:.3f} s", file=sys.stderr)
        worst = max(growth) if growth else 0
        from_frame = times.pop("direct-frame")
        self._add(f"df.ns.insert of {rows:,} rows (pandas)", "s", times, 1.0, target=1.2,
                  notes={"cpu_s": {n: median(c) for n, c in cpu.items() if c},
                         "client_growth_mib": mib(worst), "frame_mib": mib(frame_bytes),
                         "growth_in_this_process_mib": [mib(g) for g in in_process_growth]})
        self._report_last()
        # The same, against pylance given the same pandas frame rather than Arrow in hand
        # (no target of its own: the one above is the strict one).
        self._add("  the same, direct = lance.write_dataset(the pandas frame)", "s",
                  {"direct": from_frame, "nsframe": times["nsframe"]}, 1.0, target=None)
        self._report_last()
        self.rows.append(Row("  client memory growth, % of the frame", "%",
                             {"nsframe": 100 * worst / frame_bytes}, 10.0, absolute=True))
        print(f"  client growth {mib(worst):.0f} MiB of a {mib(frame_bytes):.0f} MiB frame",
              file=sys.stderr)

    # ------------------------------------------------------------------ a trivial request
    def unknown_route(self) -> None:
        def with_requests(url: str) -> Run:
            session = requests.Session()
            return lambda: session.get(f"{url}/v1/nothing/here").content

        def with_http_client(url: str) -> Run:
            host, port = url.removeprefix("http://").split(":")
            connection = http.client.HTTPConnection(host, int(port))

            def run() -> bytes:
                connection.request("GET", "/v1/nothing/here")
                return connection.getresponse().read()
            return run

        for label, make in (("requests", with_requests), ("http.client", with_http_client)):
            cases = {"nsframe": make(self.server.url), "reference": make(self.reference.url)}
            times = interleaved(cases, 300, warmup=20)
            self.rows.append(Row(f"{label} GET of an unknown route", "ms",
                                 {n: median(t) * 1e3 for n, t in times.items()}))


def insert_data(rows: int) -> tuple[pa.Table, pd.DataFrame]:
    """The insert's rows as an Arrow table and as the pandas frame embedding code makes
    (numpy vectors in an object column, views of one matrix)."""
    matrix = np.random.default_rng(7).random((rows, DIM), dtype=np.float32)
    ids = np.arange(rows, dtype=np.int64)
    text = [f"document number {i}" for i in range(rows)]
    arrow = pa.table({"id": ids, "text": pa.array(text, pa.string()),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()),
                                                                  DIM)})
    frame = pd.DataFrame({"id": ids, "text": pd.Series(text, dtype="str"),
                          "vector": list(matrix)})
    return arrow, frame


def _insert_in_child(url: str, rows: int, out: Any) -> None:
    _, frame = insert_data(rows)
    with nsframe.connect(url) as conn:
        ident = f"bench$mem{uuid.uuid4().hex[:8]}"
        conn.create_table(ident, schema=_schema_of_insert())
        # The same insert once first: what the first call sets up once (modules, kernels,
        # the allocators' arenas: 33 MiB of RSS at 100k rows, 4-8 MiB on later calls) is
        # not what an insert costs.
        frame.ns.insert(ident, conn=conn, progress=False)
        gc.collect()
        with RssSampler(os.getpid()) as rss:
            baseline = rss.peak
            frame.ns.insert(ident, conn=conn, progress=False)
        conn.drop_table(ident)
    out.value = rss.peak - baseline


def _schema_of_insert() -> pa.Schema:
    return pa.schema([("id", pa.int64()), ("text", pa.string()),
                      ("vector", pa.list_(pa.float32(), DIM))])


def client_growth(url: str, rows: int) -> int:
    """Peak resident memory a ``df.ns.insert`` of ``rows`` rows adds to a process that
    holds the frame and did nothing else but the same insert once, over what it held
    before the call."""
    context = multiprocessing.get_context("spawn")
    out = context.Value("q", 0)
    child = context.Process(target=_insert_in_child, args=(url, rows, out))
    child.start()
    child.join()
    if child.exitcode:
        raise RuntimeError(f"the memory-measuring client failed ({child.exitcode})")
    return int(out.value)


# ---------------------------------------------------------------------- output
PATHS = ("direct", "lancedb", "embedded", "nsframe", "reference")
HEADERS = {"direct": "pylance", "lancedb": "LanceDB embedded", "embedded": "nsframe embedded",
           "nsframe": "nsframe HTTP", "reference": "reference server"}


def render(rows: list[Row]) -> None:
    table: list[list[object]] = []
    # The four paths, then any A/B variant a run added (--ab).
    paths = [*PATHS, *sorted({p for r in rows for p in r.figures} - set(PATHS))]
    for row in rows:
        cells: list[object] = [row.work]
        for path in paths:
            value = row.figures.get(path)
            ratio = row.ratio(path, row.versus)
            if value is None or (row.only and path not in row.only):
                cells.append("-")
            elif path == row.versus or ratio is None:
                cells.append(f"{value:,.3f} {row.unit}" if value < 100
                             else f"{value:,.0f} {row.unit}")
            else:
                shown = f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
                cells.append(f"{shown} {row.unit} ({ratio:.2f}x)")
        sign = ">=" if row.qps else "<="
        if row.target is None:
            cells.append("-")
        elif row.absolute:
            cells.append(f"< {row.target:g} {row.unit}")
        else:
            of = "" if row.versus == "direct" else f" of {HEADERS[row.versus]}"
            cells.append(f"{HEADERS.get(row.target_path, row.target_path)} "
                         f"{sign} {row.target}x{of}")
        cells.append(row.met())
        table.append(cells)
    print_table(["work", *(HEADERS.get(p, p) for p in paths), "target", "met"], table)


def open_lancedb(uri: str) -> Any:
    """The table's own files as a LanceDB embedded table (None without lancedb)."""
    try:
        import lancedb
    except ImportError:
        print("lancedb is not installed: no LanceDB column", file=sys.stderr)
        return None
    location = Path(uri.removeprefix("file://"))
    return lancedb.connect(location.parent).open_table(location.name.removesuffix(".lance"))


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds, shorter slots, 100,000-row insert")
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the query table")
    parser.add_argument("--rounds", type=int, default=None, help="latency rounds (200; 40)")
    parser.add_argument("--seconds", type=float, default=None, help="QPS slot (5 s; 2 s)")
    parser.add_argument("--insert-rows", type=int, default=None,
                        help="rows of df.ns.insert (1,000,000; quick 100,000)")
    parser.add_argument("--repeat", type=int, default=None, help="insert repeats (3; 2)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes of the server (nsframe serve --workers)")
    parser.add_argument("--qps-workers", default="1,2",
                        help="worker counts compared under load; the table shows the best "
                        "(default 1,2)")
    parser.add_argument("--only", default="latency,count,qps,read,insert,route",
                        help="sections to run (comma-separated)")
    parser.add_argument("--no-embedded", action="store_true",
                        help="leave out the embedded default")
    parser.add_argument("--ab", default="",
                        help="A/B variants of nsframe's client to add as paths: 'requests' "
                        "(every call through requests.Session, not urllib3), "
                        "'embedded-http' (the embedded server over loopback HTTP)")
    args = parser.parse_args(argv)
    quick = bool(args.quick)
    qps_workers = [int(x) for x in args.qps_workers.split(",") if x] or [args.workers]
    return Options(
        quick=quick, rows=args.rows,
        rounds=args.rounds or (40 if quick else 200),
        seconds=args.seconds or (2.0 if quick else 5.0),
        insert_rows=args.insert_rows or (100_000 if quick else 1_000_000),
        repeat=args.repeat or (2 if quick else 3),
        workers=args.workers, qps_workers=qps_workers,
        read_runs=10 if quick else 30,
        client_ab=not args.no_embedded,
        sections=set(args.only.split(",")),
        ab={a for a in args.ab.split(",") if a},
    )


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse(argv)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nsframe-issue-")))
        server = stack.enter_context(serve_in_subprocess(
            workdir / "root", args=["--workers", str(opts.workers)]))
        with requests.Session() as session:
            load(session, server.url, opts.rows)
        conn = stack.enter_context(nsframe.connect(server.url))
        uri = conn.client.describe_table(TABLE_ID)["location"]
        ds = lance.dataset(uri)
        reference = stack.enter_context(reference_in_subprocess({TABLE: Path(uri)}))
        embedded = (stack.enter_context(nsframe.connect(server.root)) if opts.client_ab
                    else None)
        bench = Bench(opts, server, reference, conn, embedded, ds, open_lancedb(uri))
        if "requests" in opts.ab:
            from bench_transports import RequestsTransport

            slow = stack.enter_context(nsframe.connect(server.url,
                                                       transport=RequestsTransport()))
            bench.clients["nsframe (requests)"] = slow
        if "embedded-http" in opts.ab and embedded is not None:
            # The embedded server over loopback HTTP, as before the in-process transport.
            over_http = stack.enter_context(nsframe.connect(server.root,
                                                            transport=HTTPTransport()))
            bench.clients["embedded (http)"] = over_http
        print(f"loaded {opts.rows:,} rows in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
        sections: dict[str, Callable[[], None]] = {
            "latency": bench.latency, "count": bench.count_rows, "qps": bench.throughput,
            "read": bench.bulk_read,
            "insert": lambda: bench.insert(workdir), "route": bench.unknown_route,
        }
        for name, section in sections.items():
            if name in opts.sections:
                gc.collect()
                section()
    elapsed = time.perf_counter() - started
    load_average = [round(x, 2) for x in os.getloadavg()]
    print(f"\n{opts.rows:,} rows x {DIM}-d; {opts.rounds} rounds; QPS slots of "
          f"{opts.seconds:g} s; server workers {opts.workers}; "
          f"{elapsed:.0f} s; load average {load_average}\n")
    render(bench.rows)
    path = write_results("issue", {
        "options": {k: (sorted(v) if isinstance(v, set) else v)
                    for k, v in vars(opts).items()},
        "load_average": load_average, "seconds": elapsed,
        "rows": [{"work": r.work, "unit": r.unit, "figures": r.figures,
                  "ratios": {p: r.ratio(p) for p in r.figures}, "target": r.target,
                  "met": r.met(), "notes": r.notes} for r in bench.rows],
    })
    print(f"\nresults: {path}")
    print(json.dumps({"met": [r.work for r in bench.rows if r.met() == "met"],
                      "not_met": [r.work for r in bench.rows if r.met() == "NOT met"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
