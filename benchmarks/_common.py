"""Shared helpers for the benchmark scripts: data, a server in a subprocess, statistics, output.

Run the scripts from the repository root, e.g. ``.venv/bin/python benchmarks/bench_insert.py``.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import requests

RESULTS_DIR = Path(__file__).parent / "results"
DIM = 128
BATCH_ROWS = 8192
# Random vectors are drawn once into a pool and cycled, so that generating the data
# costs next to nothing in the timed part and both paths pay the same.
_POOL_ROWS = 65_536
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # end-of-stream marker of the IPC format


def schema(dim: int = DIM) -> pa.Schema:
    return pa.schema([
        ("id", pa.int64()),
        ("text", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def batches(rows: int, *, start: int = 0, batch_rows: int = BATCH_ROWS, dim: int = DIM,
            seed: int = 42) -> Iterator[pa.RecordBatch]:
    """``rows`` rows (id, text, vector) as record batches, made one at a time."""
    pool = _vector_pool(dim, seed)
    target = schema(dim)
    made = 0
    while made < rows:
        n = min(batch_rows, rows - made)
        first = start + made
        ids = pa.array(np.arange(first, first + n, dtype=np.int64))
        text = pc.binary_join_element_wise("document number ", pc.cast(ids, pa.string()), "")
        offset = (first % (_POOL_ROWS - n + 1)) * dim if n <= _POOL_ROWS else 0
        values = pa.array(pool[offset:offset + n * dim])
        vectors = pa.FixedSizeListArray.from_arrays(values, dim)
        yield pa.record_batch([ids, text, vectors], schema=target)
        made += n


@functools.lru_cache(maxsize=4)
def _vector_pool(dim: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.random.default_rng(seed).random((_POOL_ROWS, dim), dtype=np.float32).ravel()


class IpcStreamBody:
    """An Arrow IPC stream body, serialised batch by batch while the request is sent.

    Iterating yields the schema message, one message per batch, then the end-of-stream
    marker; no buffer larger than one batch is ever built. ``nbytes`` counts what was sent.
    """

    def __init__(self, source: Iterable[pa.RecordBatch], schema: pa.Schema) -> None:
        self._source = source
        self._schema = schema
        self.nbytes = 0
        self.rows = 0

    def __iter__(self) -> Iterator[bytes]:
        for part in self._messages():
            view = memoryview(part)
            self.nbytes += view.nbytes
            # The message's own memory, not a bytes copy: sockets send any buffer.
            yield cast(bytes, view)

    def _messages(self) -> Iterator[Any]:
        yield self._schema.serialize()
        for batch in self._source:
            self.rows += batch.num_rows
            yield batch.serialize()
        yield _EOS


def ipc_nbytes(rows: int, **options: Any) -> int:
    """The size of the IPC stream of ``batches(rows, **options)``, without keeping it."""
    body = IpcStreamBody(batches(rows, **options), schema(options.get("dim", DIM)))
    for _ in body:
        pass
    return body.nbytes


# ---------------------------------------------------------------------- the server
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    """An `nsframe serve` running in a child process."""

    url: str
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        """The process that answers requests: the one worker of `nsframe serve`, which runs
        it under a supervising parent (docs/server.md, Crash containment); else the
        process itself (a server of several workers, an older nsframe, pylance's)."""
        workers = [child for child in psutil.Process(self.process.pid).children()
                   if "spawn_main" in " ".join(child.cmdline())]
        return workers[0].pid if len(workers) == 1 else self.process.pid

    def rss(self) -> int:
        return int(psutil.Process(self.pid).memory_info().rss)


@contextmanager
def serve_in_subprocess(root: str | os.PathLike[str] | None = None,
                        startup_timeout: float = 60.0,
                        code: str | os.PathLike[str] | None = None,
                        args: Sequence[str] = ()) -> Iterator[ServerProcess]:
    """Start ``python -m nsframe._cli serve`` on a free loopback port; stop it afterwards.

    A separate process, so that its memory can be measured apart from the client's.
    ``code``: a directory holding another copy of the ``nsframe`` package to serve (an A/B
    baseline, e.g. a copy taken before a change); default this checkout. ``args``: more
    `nsframe serve` flags (``--config``, ``--api-key``, ``--workers 2``).
    """
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-") as scratch:
        data_root = Path(root) if root is not None else Path(scratch)
        port = free_port()
        command = [sys.executable, "-m", "nsframe._cli", "serve", str(data_root),
                   "--port", str(port), "--log-level", "warning", *args]
        # `python -m` puts the working directory first on sys.path: it picks the code.
        cwd = Path(code) if code is not None else Path(__file__).resolve().parent.parent
        process = subprocess.Popen(command, cwd=cwd)
        url = f"http://127.0.0.1:{port}"
        with _stopped_at_exit(process):
            _wait_until_up(url, process, startup_timeout)
            yield ServerProcess(url, data_root, process)


# pylance's reference REST server, kept running until the parent closes our stdin.
_REFERENCE_SERVER = """
import sys
import lance.namespace
with lance.namespace.RestAdapter("dir", {"root": sys.argv[1]}, port=int(sys.argv[2])):
    sys.stdin.read()
"""


@contextmanager
def reference_in_subprocess(tables: dict[str, Path],
                            startup_timeout: float = 60.0) -> Iterator[ServerProcess]:
    """pylance's reference server (`lance.namespace.RestAdapter` over a directory) in a
    child process, serving the given Lance datasets as top-level tables by those names.

    The datasets are linked, not copied: both servers read the very same files.
    """
    with tempfile.TemporaryDirectory(prefix="nsframe-reference-") as scratch:
        root = Path(scratch)
        for name, dataset in tables.items():
            (root / f"{name}.lance").symlink_to(Path(dataset).resolve())
        port = free_port()
        process = subprocess.Popen([sys.executable, "-c", _REFERENCE_SERVER, str(root),
                                    str(port)], stdin=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        with _stopped_at_exit(process):
            _wait_until_up(url, process, startup_timeout)
            yield ServerProcess(url, root, process)


@contextmanager
def _stopped_at_exit(process: subprocess.Popen[bytes]) -> Iterator[None]:
    try:
        yield
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def settle() -> None:
    """Flush the page cache's dirty pages and collect garbage before a timed write.

    Each 1M-row insert writes about 0.5 GB; unflushed, it is written back during the
    next case and bills that one (direct writes varied 0.9-2.9 s that way).
    """
    gc.collect()
    os.sync()


def _wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The server exited at start-up with code {process.returncode}.")
        try:
            requests.get(f"{url}/v1/namespace/$/list", timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"The server did not answer within {timeout}s.")


def cpu_seconds(pid: int | None = None, *, children: bool = False) -> float:
    """User + system CPU time of a process (all its threads) so far; with ``children``,
    plus that of its live child processes (a server's workers)."""
    process = psutil.Process(pid)
    processes = [process, *(process.children(recursive=True) if children else [])]
    total = 0.0
    for each in processes:
        try:
            times = each.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


class RssSampler:
    """Samples a process's resident memory in a background thread; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self._process = psutil.Process(pid)
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self.peak = 0
        self.samples = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, int(self._process.memory_info().rss))
            self.samples += 1
            self._stop.wait(self._interval)

    def __enter__(self) -> RssSampler:
        self.peak = int(self._process.memory_info().rss)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------- statistics
def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), interpolated between the closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


@dataclass
class Timing:
    """Repeated measurements of one thing."""

    name: str
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return median(self.seconds)

    @property
    def p99(self) -> float:
        return percentile(self.seconds, 99)

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "runs": len(self.seconds), "median_s": self.median,
                "p99_s": self.p99, "min_s": min(self.seconds), "max_s": max(self.seconds),
                "all_s": self.seconds}


# ---------------------------------------------------------------------- output
def mib(nbytes: float) -> float:
    return nbytes / (1 << 20)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain fixed-width table on stdout; numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for raw, row in zip(rows, cells, strict=True):
        print("  ".join(
            c.rjust(w) if isinstance(v, (int, float)) else c.ljust(w)
            for v, c, w in zip(raw, row, widths, strict=True)
        ))


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def environment() -> dict[str, Any]:
    import lance

    return {
        "python": sys.version.split()[0],
        "pylance": lance.__version__,
        "pyarrow": pa.__version__,
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / (1 << 30), 1),
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    """Save ``results`` as ``benchmarks/results/<name>-<timestamp>.json``; returns the path."""
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"environment": environment(), **results}, indent=2) + "\n")
    return path


def threads_qps(make: Callable[[], Callable[[int], object]], clients: int,
                seconds: float) -> float:
    """Queries per second of ``clients`` threads querying back to back: each thread has
    its own runner from ``make()``, called with a running count unique across threads."""
    runners = [make() for _ in range(clients)]
    counts = [0] * clients
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def work(i: int) -> None:
        barrier.wait()
        n = 0
        try:
            while time.perf_counter() < deadline[0]:
                runners[i](n * clients + i)
                n += 1
        except BaseException as exc:  # re-raised below
            errors.append(exc)
        counts[i] = n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    barrier.wait()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return sum(counts) / (time.perf_counter() - began)
