"""The server's peak memory under two hostile loads (issue "Hardening", point 8).

1. A vector query with k = 1,000,000 on a table of 1,000,000 rows (128-d float32, ~530
   MiB): before the bounds the server grew by 2.3 GiB for a 500 MiB result. With the
   default `max_k` (10,000) it is refused with a 400 and the server does not grow; with
   ``max_k = 1000000`` configured the result streams, and the peak growth is compared with
   the result's size (the goal: within 2x).
2. 100 concurrent 16 MiB JSON bodies without credentials on a server that requires them:
   before, each was read whole before its 401 (40 grew the server by 480 MiB). Now the
   credential headers are checked first and no body over 64 KiB is read (goal: < 50 MiB).

Each server is an `nsframe serve` child process; its RSS is sampled every 10 ms.

    .venv/bin/python benchmarks/bench_memory.py [--rows 1000000] [--bodies 100]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DIM,
    IpcStreamBody,
    RssSampler,
    batches,
    mib,
    print_table,
    schema,
    serve_in_subprocess,
    settle,
    write_results,
)

TABLE = "bench$vectors"
KEY = "bench-memory-" + "k" * 24


def load(url: str, rows: int) -> None:
    requests.post(f"{url}/v1/namespace/bench/create", json={}, timeout=60).raise_for_status()
    body = IpcStreamBody(batches(rows), schema())
    resp = requests.post(f"{url}/v1/table/{TABLE}/create", data=body, timeout=3600,
                         headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    resp.raise_for_status()


def vector_query(url: str, pid: int, k: int) -> dict[str, Any]:
    """One vector query of depth ``k``, its answer read as it streams; peak RSS growth."""
    settle()
    vector = np.random.default_rng(7).random(DIM, dtype=np.float32).tolist()
    with RssSampler(pid) as sampler:
        base = sampler.peak
        started = time.perf_counter()
        size = 0
        with requests.post(f"{url}/v1/table/{TABLE}/query", stream=True, timeout=3600,
                           json={"vector": vector, "k": k, "bypass_vector_index": True}) as resp:
            status = resp.status_code
            for chunk in resp.iter_content(1 << 20):
                size += len(chunk)
        seconds = time.perf_counter() - started
    return {"k": k, "status": status, "result_bytes": size, "seconds": round(seconds, 2),
            "rss_before": base, "rss_peak": sampler.peak, "growth": sampler.peak - base}


def unauthenticated_bodies(url: str, pid: int, count: int, size: int) -> dict[str, Any]:
    """``count`` clients at once, each sending a ``size``-byte JSON body, no credential."""
    host, port = url.rsplit("//", 1)[1].split(":")
    body = b'{"properties": {"blob": "' + b"x" * (size - 30) + b'"}}'
    head = (f"POST /v1/namespace/x/create HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    statuses: list[int] = []
    start = threading.Barrier(count)

    def client() -> None:
        with socket.create_connection((host, int(port)), timeout=120) as sock:
            start.wait()
            # The server may answer before the whole body went, as intended.
            with contextlib.suppress(OSError):
                sock.sendall(head)
                sock.sendall(body)  # one shared buffer: the client does not copy it
            data = b""
            with contextlib.suppress(OSError):
                data = sock.recv(4096)
            statuses.append(int(data.split()[1]) if data.startswith(b"HTTP/") else 0)

    settle()
    with RssSampler(pid) as sampler:
        base = sampler.peak
        started = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    return {"bodies": count, "body_bytes": len(body), "statuses": sorted(set(statuses)),
            "seconds": round(seconds, 2), "rss_before": base, "rss_peak": sampler.peak,
            "growth": sampler.peak - base}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bodies", type=int, default=100)
    parser.add_argument("--body-mib", type=int, default=16)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"rows": args.rows}
    with tempfile.TemporaryDirectory(prefix="nsframe-bench-memory-") as scratch:
        root = Path(scratch) / "data"
        config = Path(scratch) / "nsframe.toml"
        config.write_text(f"[limits]\nmax_k = {args.rows}\n")
        with serve_in_subprocess(root) as server:
            load(server.url, args.rows)
            results["default_max_k"] = vector_query(server.url, server.pid, args.rows)
        with serve_in_subprocess(root, args=["--config", str(config)]) as server:
            results["raised_max_k"] = vector_query(server.url, server.pid, args.rows)
        with serve_in_subprocess(Path(scratch) / "auth", args=["--api-key", KEY]) as server:
            results["unauthenticated"] = unauthenticated_bodies(
                server.url, server.pid, args.bodies, args.body_mib << 20)
    rows = []
    for name in ("default_max_k", "raised_max_k"):
        q = results[name]
        ratio = q["growth"] / q["result_bytes"] if q["result_bytes"] > 1000 else 0.0
        q["growth_per_result_byte"] = round(ratio, 2)
        rows.append([f"vector query k={q['k']:,} ({name})", q["status"],
                     f"{mib(q['result_bytes']):.0f}", f"{mib(q['growth']):.0f}",
                     f"{ratio:.2f}" if ratio else "-", q["seconds"]])
    u = results["unauthenticated"]
    rows.append([f"{u['bodies']} x {mib(u['body_bytes']):.0f} MiB bodies, no credential",
                 ",".join(map(str, u["statuses"])), "-", f"{mib(u['growth']):.0f}", "-",
                 u["seconds"]])
    print_table(["load", "status", "result MiB", "RSS growth MiB", "growth/result", "s"],
                rows)
    print(f"results: {write_results('bench_memory', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
