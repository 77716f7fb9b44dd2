"""Where Lance's SQL parser and planner run out of stack: chains of N terms per operator.

Lance (sqlparser + DataFusion) builds and walks expression trees recursively, so a chain
``x = x = ...`` or ``'a'||'a'||...`` of some hundreds of terms ends the process with
SIGSEGV. Each probe therefore runs in a child process: it writes a 100-row table, calls
one pylance entry point (the *site*: ``scanner_count`` is the server's count_rows) with
an expression of N terms of one operator kind (the *kind*), and reports "ok", "error"
(Lance refused it: a 400 for nsframe), "timeout" (with the child's stacks) or the signal
that killed it. The sizes of ``--ladder`` are tried in turn up to the first failure;
``--bisect`` then narrows it down. The call runs in a worker thread, as the server's
handlers do; ``--main-thread`` runs it on the main thread instead.

    .venv/bin/python benchmarks/expression_thresholds.py --sites scanner_count
    .venv/bin/python benchmarks/expression_thresholds.py --kinds eq,concat_literal \\
        --sites all --ladder 300,700,1000 --bisect
    .venv/bin/python benchmarks/expression_thresholds.py --kinds or --in-list 1000,37000

Prints one row per (kind, site) with the seconds (or the failure) at each size, and the
seconds for IN lists of the sizes asked. docs/server.md ("Expression limits") records
the runs the defaults are based on.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

# ------------------------------------------------------------------ expressions
Col = Callable[[str], str]  # a column's name as the site spells it (merge: target.id)


@dataclass(frozen=True)
class Kind:
    # "int", "float", "str" or "bool": the type of the value expression.
    type: str
    build: Callable[[int, Col], str]


def _case(n: int, c: Col) -> str:
    whens = " ".join(f"WHEN {c('id')} = {i} THEN {i}" for i in range(n))
    return f"CASE {whens} ELSE 0 END"


KINDS: dict[str, Kind] = {
    "plus": Kind("int", lambda n, c: "+".join([c("id")] * n)),
    "minus": Kind("int", lambda n, c: " - ".join([c("id")] * n)),
    "times": Kind("float", lambda n, c: "*".join([c("x")] * n)),
    "divide": Kind("float", lambda n, c: "/".join([c("x")] * n)),
    "modulo": Kind("int", lambda n, c: "%".join([c("id")] * n)),
    "concat": Kind("str", lambda n, c: "||".join([c("s")] * n)),
    # Chains of literals: DataFusion folds constants, recursively.
    "concat_literal": Kind("str", lambda n, c: "||".join(["'a'"] * n)),
    "plus_literal": Kind("int", lambda n, c: "+".join(["1"] * n)),
    "and": Kind("bool", lambda n, c: " AND ".join([c("flag")] * n)),
    "or": Kind("bool", lambda n, c: " OR ".join([c("flag")] * n)),
    "eq_or": Kind("bool", lambda n, c: " OR ".join(f"{c('id')} = {i}" for i in range(n))),
    "eq": Kind("bool", lambda n, c: " = ".join([c("flag")] * n)),
    "lt": Kind("bool", lambda n, c: " < ".join([c("flag")] * n)),
    "like_or": Kind("bool", lambda n, c: " OR ".join([f"{c('s')} LIKE 'a%'"] * n)),
    "function": Kind("int", lambda n, c: "abs(" * n + c("id") + ")" * n),
    "case": Kind("int", _case),
    "not": Kind("bool", lambda n, c: "NOT " * n + c("flag")),
    "negate": Kind("int", lambda n, c: "- " * n + c("id")),
    "cast": Kind("int", lambda n, c: c("id") + "::bigint" * n),
    "like": Kind("bool", lambda n, c: " LIKE ".join([c("s")] * n)),
    "is_null": Kind("bool", lambda n, c: c("flag") + " IS NULL" * n),
    "in_chain": Kind("bool", lambda n, c: c("flag") + " IN (true)" * n),
    "parens": Kind("int", lambda n, c: "(" * n + c("id") + ")" * n),
}


def predicate(kind: Kind, n: int, c: Col) -> str:
    """A boolean condition holding the chain: the chain itself or a comparison of it."""
    value = kind.build(n, c)
    return {"bool": value, "str": f"{value} = 'x'"}.get(kind.type, f"{value} > 0")


TARGET = {"int": "id", "float": "x", "str": "s", "bool": "flag"}


# ------------------------------------------------------------------ sites (child side)
def _sites() -> dict[str, Callable[..., object]]:
    import pyarrow as pa

    def merge(ds: object, data: pa.Table, **clauses: str) -> object:
        builder = ds.merge_insert("id")  # type: ignore[attr-defined]
        if "matched" in clauses:
            builder = builder.when_matched_update_all(clauses["matched"])
        else:
            builder = builder.when_matched_update_all()
        if "by_source" in clauses:
            builder = builder.when_not_matched_by_source_delete(clauses["by_source"])
        return builder.execute(data)

    return {
        "count_rows": lambda ds, data, k, n: ds.count_rows(filter=predicate(k, n, str)),
        # nsframe's count_rows: a scanner per group of fragments, the filter in parentheses.
        "scanner_count": lambda ds, data, k, n: ds.scanner(
            filter=f"({predicate(k, n, str)})", fragments=ds.get_fragments(), columns=[],
            with_row_id=True).count_rows(),
        "to_table": lambda ds, data, k, n: ds.to_table(filter=predicate(k, n, str),
                                                       columns=["id"]),
        "projection": lambda ds, data, k, n: ds.to_table(
            columns={"id": "id", "v": k.build(n, str)}, limit=1),
        "delete": lambda ds, data, k, n: ds.delete(predicate(k, n, str)),
        "update_value": lambda ds, data, k, n: ds.update({TARGET[k.type]: k.build(n, str)}),
        "update_where": lambda ds, data, k, n: ds.update({"id": "id"},
                                                         where=predicate(k, n, str)),
        "add_columns": lambda ds, data, k, n: ds.add_columns({"v": k.build(n, str)}),
        "merge_matched": lambda ds, data, k, n: merge(
            ds, data, matched=predicate(k, n, lambda name: f"target.{name}")),
        "merge_by_source": lambda ds, data, k, n: merge(
            ds, data, by_source=predicate(k, n, str)),
    }


SITES = ("count_rows", "scanner_count", "to_table", "projection", "delete", "update_value",
         "update_where", "add_columns", "merge_matched", "merge_by_source")


def child() -> None:
    """One probe: the job comes as JSON on stdin, the outcome leaves as JSON on stdout."""
    import tempfile
    import threading

    import lance
    import pyarrow as pa

    job = json.load(sys.stdin)
    # A probe that hangs shows where, on stderr, before the parent gives up on it.
    faulthandler.dump_traceback_later(job["timeout"] - 1, exit=True)
    rows = 100
    data = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "x": pa.array([float(i) for i in range(rows)]),
        "s": pa.array(["a"] * rows),
        "flag": pa.array([True] * rows),
    })
    ds = lance.write_dataset(data, tempfile.mkdtemp() + "/t")
    out: dict[str, object] = {}

    def run() -> None:
        started = time.perf_counter()
        if job["kind"] == "in_list":
            values = ",".join(str(i) for i in range(job["n"]))
            def call() -> object:
                return ds.count_rows(filter=f"id IN ({values})")
        else:
            site = _sites()[job["site"]]
            call = lambda: site(ds, data, KINDS[job["kind"]], job["n"])  # noqa: E731
        try:
            call()
            out["outcome"] = "ok"
        except Exception as exc:  # Lance refused it: what a client would get as a 400
            out["outcome"] = "error"
            out["message"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        out["seconds"] = time.perf_counter() - started

    if job["thread"]:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
    else:
        run()
    print(json.dumps(out), flush=True)
    # Not the interpreter's shutdown: it sometimes waits forever on Lance's threads.
    os._exit(0)


# ------------------------------------------------------------------ probing (parent side)
def probe(kind: str, site: str, n: int, *, thread: bool, timeout: float) -> dict[str, object]:
    job = json.dumps({"kind": kind, "site": site, "n": n, "thread": thread,
                      "timeout": timeout})
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, __file__, "--child"], input=job.encode(),
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "seconds": time.perf_counter() - started}
    if done.returncode == 1 and b"Timeout (" in done.stderr:  # faulthandler's dump
        stack = done.stderr.decode(errors="replace")
        return {"outcome": "timeout", "seconds": time.perf_counter() - started,
                "message": stack[-1500:]}
    if done.returncode < 0:
        return {"outcome": f"signal {-done.returncode}",
                "seconds": time.perf_counter() - started}
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return {"outcome": f"exit {done.returncode}", "message": " ".join(tail)}
    result: dict[str, object] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def survives(result: dict[str, object]) -> bool:
    return result["outcome"] in ("ok", "error")


def ladder(kind: str, site: str, sizes: list[int], *, thread: bool,
           timeout: float) -> list[dict[str, object]]:
    """Probes at each size in turn, up to the first that crashes or runs out of time."""
    rows: list[dict[str, object]] = []
    for n in sizes:
        result = probe(kind, site, n, thread=thread, timeout=timeout)
        rows.append({"kind": kind, "site": site, "thread": thread, "n": n, **result})
        if not survives(result):
            break
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kinds", default="all", help="comma-separated; " + ",".join(KINDS))
    parser.add_argument("--sites", default="count_rows", help="comma-separated, or all; "
                        + ",".join(SITES))
    parser.add_argument("--main-thread", action="store_true")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per probe; a probe that takes longer counts as failed")
    parser.add_argument("--ladder", default="100,300,1000,3000,10000",
                        help="the N tried in turn, up to the first failure")
    parser.add_argument("--bisect", action="store_true",
                        help="then bisect between the last N that passed and the failure")
    parser.add_argument("--in-list", default="", help="IN list sizes to time, e.g. 1000,100000")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    if args.child:
        child()
        return
    kinds = list(KINDS) if args.kinds == "all" else [k for k in args.kinds.split(",") if k]
    sites = list(SITES) if args.sites == "all" else args.sites.split(",")
    sizes = [int(x) for x in args.ladder.split(",") if x]
    thread = not args.main_thread
    rows: list[dict[str, object]] = []
    print(f"{'kind':10} {'site':16} " + " ".join(f"{'N=' + str(n):>14}" for n in sizes))
    for kind in kinds:
        for site in sites:
            found = ladder(kind, site, sizes, thread=thread, timeout=args.timeout)
            rows.extend(found)
            cells = [_cell(r) for r in found]
            print(f"{kind:10} {site:16} " + " ".join(f"{c:>14}" for c in cells), flush=True)
            if args.bisect and not survives(found[-1]) and len(found) > 1:
                good, bad = int(found[-2]["n"]), int(found[-1]["n"])  # type: ignore[call-overload]
                while bad - good > max(8, good // 20):
                    mid = (good + bad) // 2
                    result = probe(kind, site, mid, thread=thread, timeout=args.timeout)
                    rows.append({"kind": kind, "site": site, "thread": thread, "n": mid,
                                 **result})
                    good, bad = (mid, bad) if survives(result) else (good, mid)
                print(f"{'':27} passes at N={good}, fails at N={bad}", flush=True)
    for n in [int(x) for x in args.in_list.split(",") if x]:
        result = probe("in_list", "count_rows", n, thread=thread, timeout=args.timeout)
        rows.append({"kind": "in_list", "site": "count_rows", "n": n, **result})
        print(f"id IN ({n} values): {_cell(result)}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


def _cell(result: dict[str, object]) -> str:
    outcome = str(result["outcome"])
    if outcome in ("ok", "error"):
        mark = "" if outcome == "ok" else " err"
        return f"{float(result['seconds']):.2f} s{mark}"  # type: ignore[arg-type]
    return "SIGSEGV" if outcome == "signal 11" else outcome


if __name__ == "__main__":
    main()
