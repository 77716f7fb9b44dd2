"""Which library should carry `HTTPTransport`: urllib3 directly, requests, or httpx.

Each is wrapped as an `nsframe.transport.Transport` (the same few lines for each) and
put under the same `nsframe.Client`, so the only difference is the library's own work
per call. Three small round trips against one `nsframe serve` subprocess: describe a
table, count its rows, and a k=10 vector query on 2,000 rows x 16-d (the answer is a
few hundred bytes of Arrow). Calls are interleaved (one of each transport in turn), so
drift in the machine's load hits all alike; medians are printed with the ratio to
urllib3 (nsframe's `HTTPTransport`).

Run: ``.venv/bin/python benchmarks/bench_transports.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import requests
from _common import Timing, print_table, serve_in_subprocess, write_results

import nsframe
from nsframe.transport import (
    NO_LIMITS,
    Body,
    HTTPTransport,
    Request,
    Response,
    Timeout,
)

DIM = 16
ROWS = 2_000


class RequestsTransport:
    """requests.Session as a transport (what nsframe used before)."""

    def __init__(self) -> None:
        self._session = requests.Session()
        self._session.trust_env = False

    def send(self, method: str, url: str, *, headers: Mapping[str, str], body: Body = None,
             timeout: Timeout = NO_LIMITS, stream: bool = False) -> Response:
        resp = self._session.request(method, url, data=body, headers=dict(headers),
                                     timeout=(timeout.connect, timeout.read))
        return Response(resp.status_code, dict(resp.headers), Request(method, url, headers),
                        content=resp.content)

    def close(self) -> None:
        self._session.close()


class HttpxTransport:
    """httpx.Client as a transport."""

    def __init__(self) -> None:
        self._client = httpx.Client(trust_env=False)

    def send(self, method: str, url: str, *, headers: Mapping[str, str], body: Body = None,
             timeout: Timeout = NO_LIMITS, stream: bool = False) -> Response:
        resp = self._client.request(method, url, content=body, headers=dict(headers),
                                    timeout=httpx.Timeout(None, connect=timeout.connect,
                                                          read=timeout.read))
        return Response(resp.status_code, dict(resp.headers), Request(method, url, headers),
                        content=resp.content)

    def close(self) -> None:
        self._client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vectors = rng.random((ROWS, DIM), dtype=np.float32)
    data = pa.table({"id": np.arange(ROWS),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()),
                                                                 DIM)})
    transports: dict[str, Any] = {"urllib3": HTTPTransport(), "requests": RequestsTransport(),
                                  "httpx": HttpxTransport()}
    with serve_in_subprocess() as server:
        conns = {name: nsframe.connect(server.url, transport=t)
                 for name, t in transports.items()}
        conns["urllib3"].create_table("t", data)
        tables = {name: conn.table("t") for name, conn in conns.items()}
        probe = vectors[0]
        calls: dict[str, Callable[[nsframe.Table], object]] = {
            "describe": lambda t: t._client.describe_table(t.id),
            "count_rows": lambda t: t.count_rows(),
            "query k=10": lambda t: t.search(probe).limit(10).to_arrow(),
        }
        timings = {(call, name): Timing(f"{call} {name}") for call in calls for name in conns}
        for call, run in calls.items():
            for tbl in tables.values():  # warm up: connections open, code paths hot
                for _ in range(20):
                    run(tbl)
            for _ in range(args.runs):
                for name, tbl in tables.items():
                    started = time.perf_counter()
                    run(tbl)
                    timings[call, name].seconds.append(time.perf_counter() - started)
        for conn in conns.values():
            conn.close()
    rows = []
    for call in calls:
        base = timings[call, "urllib3"].median
        rows.append([call, *(round(timings[call, n].median * 1e3, 3) for n in conns),
                     *(round(timings[call, n].median / base, 2) for n in ("requests", "httpx"))])
    print(f"\nmedian ms per call over {args.runs} interleaved runs (nsframe.Client on top)")
    print_table(["call", "urllib3", "requests", "httpx", "requests/urllib3", "httpx/urllib3"],
                rows)
    path = write_results("transports", {"runs": args.runs,
                                        "timings": [t.summary() for t in timings.values()]})
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
