"""Server memory and time per page while paging through a long version history (issue
23, point 6), this checkout (B) against a baseline (A) in the same run.

One table gets ``--versions`` versions: ``--appends`` one-row appends (so that later
manifests hold that many fragments, as a table fed by many small inserts does), then
configuration changes, which add versions without data. Each server, a fresh
`nsframe serve` process over the same folder, lists every version ``--limit`` at a
time. Reported per server: its RSS before, its peak while paging and after; the time of
the first page, the last page and the median page. Before the fix, every listed
manifest stayed in the server's shared Lance session (6,600 versions: 223 MiB to
1.66 GB, later pages 8 s).

    .venv/bin/python benchmarks/bench_version_listing.py --base-rev main
    .venv/bin/python benchmarks/bench_version_listing.py --quick      # 3,000 versions, no A
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RssSampler, median, mib, print_table, serve_in_subprocess, write_results
from bench_server_cpu import REPO, exported, revision

ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


def make_history(root: Path, versions: int, appends: int) -> None:
    """Table ``t`` under ``root`` with ``versions`` versions, made with pylance directly."""
    with serve_in_subprocess(root) as server:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, pa.schema([("id", pa.int64())])) as writer:
            writer.write_table(pa.table({"id": [0]}))
        resp = requests.post(f"{server.url}/v1/table/t/create",
                             data=sink.getvalue().to_pybytes(), headers=ARROW)
        resp.raise_for_status()
        location = requests.post(f"{server.url}/v1/table/t/describe",
                                 json={}).json()["location"]
    ds = lance.dataset(location)
    for i in range(1, min(appends, versions - 1) + 1):
        ds = lance.write_dataset(pa.table({"id": [i]}), location, mode="append")
    while ds.version < versions:
        ds.update_config({"step": str(ds.version)})


def page_through(code: Path, root: Path, limit: int) -> dict[str, Any]:
    with serve_in_subprocess(root, code=code) as server, requests.Session() as http:
        http.post(f"{server.url}/v1/table/t/describe", json={}).raise_for_status()
        before = server.rss()
        seconds: list[float] = []
        listed = 0
        token: str | None = None
        with RssSampler(server.pid) as sampler:
            while True:
                body: dict[str, Any] = {"limit": limit}
                if token:
                    body["page_token"] = token
                started = time.perf_counter()
                resp = http.post(f"{server.url}/v1/table/t/version/list", json=body)
                seconds.append(time.perf_counter() - started)
                resp.raise_for_status()
                listed += len(resp.json()["versions"])
                token = resp.json().get("page_token")
                if not token:
                    break
        return {"listed": listed, "pages": len(seconds), "rss_before": before,
                "rss_peak": sampler.peak, "rss_after": server.rss(), "page_seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-rev", default=None,
                        help="git revision of the baseline (A), e.g. main; none: B alone")
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=1_000)
    parser.add_argument("--limit", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="3,000 versions, 500 appends")
    args = parser.parse_args(argv)
    if args.quick:
        args.versions, args.appends = 3_000, 500
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nsframe-vl-")))
        codes: dict[str, tuple[Path, str]] = {}
        if args.base_rev is not None:
            codes["A"] = (stack.enter_context(exported(args.base_rev)), args.base_rev)
        codes["B"] = (REPO, f"this checkout ({revision(REPO)})")
        started = time.perf_counter()
        make_history(scratch / "root", args.versions, args.appends)
        print(f"{args.versions:,} versions ({args.appends:,} appends) made in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        results: dict[str, Any] = {}
        for name, (code, label) in codes.items():
            results[name] = page_through(code, scratch / "root", args.limit)
            results[name]["server"] = label
            print(f"  {name}: {results[name]['pages']} pages", file=sys.stderr)
    rows = []
    for name, found in results.items():
        pages = found["page_seconds"]
        rows.append([f"{name}: {found['server']}", found["listed"], mib(found["rss_before"]),
                     mib(found["rss_peak"]), mib(found["rss_after"]), pages[0], pages[-1],
                     median(pages)])
    if len(results) == 2:
        a, b = results["A"], results["B"]
        rows.append(["B / A", "", "", b["rss_peak"] / a["rss_peak"],
                     b["rss_after"] / a["rss_after"],
                     b["page_seconds"][0] / a["page_seconds"][0],
                     b["page_seconds"][-1] / a["page_seconds"][-1],
                     median(b["page_seconds"]) / median(a["page_seconds"])])
    print(f"\n{args.versions:,} versions, {args.appends:,} of them appends, "
          f"{args.limit:,} per page\n")
    print_table(["server", "listed", "RSS before MiB", "peak MiB", "after MiB",
                 "first page s", "last page s", "median page s"], rows)
    results["parameters"] = vars(args)
    print(f"\nresults: {write_results('version-listing', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
