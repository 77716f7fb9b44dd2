"""Issue 23, point 1: no SQL expression a client sends can crash or wedge the server.

Before: a flat chain of about 1,000 terms (``'a'||'a'||...``, 3 KB) in a count_rows
predicate ended the server with SIGSEGV, any read credential sufficing; the same chains
reached every other member Lance parses as SQL. Now every such member is measured first
(`nsframe.server._http.expressions`) and refused with a 400 naming the limit.

The servers here are real ``nsframe serve`` processes: a request that crashes one fails
its test instead of killing pytest.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests

from nsframe.server import serve_in_thread
from nsframe.server._limits import Limits
from tests.storage._servers import ServerProcess, cluster
from tests.support import ARROW_HEADERS, assert_error, ipc_stream

ROWS = 100
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()),
                    ("flag", pa.bool_())])
# The limits of the configured server: small, so that 10x past them fits in a URL.
CONFIGURED = {"max_expression_chain": 16, "max_expression_operators": 40,
              "max_predicate_depth": 8, "max_expression_terms": 100}


def table_body(n: int = ROWS, start: int = 0) -> bytes:
    ids = range(start, start + n)
    return ipc_stream({"id": list(ids), "x": [float(i) for i in ids], "s": ["a"] * n,
                       "flag": [True] * n}, schema=SCHEMA)


# ----------------------------------------------------------- expressions of n operators
# Each kind: the type of its value and the value with about n operators (or n levels).
Builder = Callable[[int], str]
KINDS: dict[str, tuple[str, Builder]] = {
    "plus": ("int", lambda n: "+".join(["id"] * (n + 1))),
    "plus_literal": ("int", lambda n: "+".join(["1"] * (n + 1))),
    "minus": ("int", lambda n: " - ".join(["id"] * (n + 1))),
    "times": ("float", lambda n: "*".join(["x"] * (n + 1))),
    "divide": ("float", lambda n: "/".join(["x"] * (n + 1))),
    "modulo": ("int", lambda n: "%".join(["id"] * (n + 1))),
    "concat": ("str", lambda n: "||".join(["s"] * (n + 1))),
    "concat_literal": ("str", lambda n: "||".join(["'a'"] * (n + 1))),
    "and": ("bool", lambda n: " AND ".join(["flag"] * (n + 1))),
    "or": ("bool", lambda n: " OR ".join(["flag"] * (n + 1))),
    "equal": ("bool", lambda n: " = ".join(["flag"] * (n + 1))),
    "less": ("bool", lambda n: " < ".join(["flag"] * (n + 1))),
    "like": ("bool", lambda n: " OR ".join(["s LIKE 'a%'"] * (n // 2 + 1))),
    "in_or": ("bool", lambda n: " OR ".join(["id IN (1)"] * (n // 3 + 1))),
    "case": ("int", lambda n: "CASE " + " ".join(f"WHEN id = {i} THEN {i}"
                                                 for i in range(n // 3 + 1)) + " ELSE 0 END"),
    "negate": ("int", lambda n: "- " * n + "id"),
    "cast": ("int", lambda n: "id" + "::bigint" * n),
    "function": ("int", lambda n: "abs(" * n + "id" + ")" * n),
    "parens": ("int", lambda n: "(" * n + "id" + ")" * n),
    "not": ("bool", lambda n: "NOT " * n + "flag"),
    "case_nested": ("int", lambda n: "CASE WHEN flag THEN " * n + "1" + " END" * n),
}
# The kinds whose size is their depth: refused by max_predicate_depth first.
DEEP = {"function", "parens", "not", "case_nested"}
# The kinds joined by AND or OR, which Lance does not nest: refused by their number.
JOINED = {"and", "or", "like", "in_or"}
TARGET = {"int": "id", "float": "x", "str": "s", "bool": "flag"}


def value(kind: str, n: int) -> str:
    return KINDS[kind][1](n)


def condition(kind: str, n: int) -> str:
    """A boolean condition holding the expression."""
    kind_type, build = KINDS[kind]
    expr = build(n)
    return {"bool": expr, "str": f"{expr} = 'b'"}.get(kind_type, f"{expr} > 1000000")


def limit_of(kind: str) -> str:
    """The limit a long expression of ``kind`` exceeds first; the others chain."""
    if kind in DEEP:
        return "max_predicate_depth"
    return "max_expression_operators" if kind in JOINED else "max_expression_chain"


# ---------------------------------------------------------------- every route with SQL
# Each sends an expression of ``kind`` with about ``n`` operators where the route takes it.
Send = Callable[[str, str, str, int], requests.Response]  # (url, table, kind, n)
Body = Callable[[str, int], dict[str, Any]]


def _json(path: str, body: Body) -> Send:
    def send(url: str, table: str, kind: str, n: int) -> requests.Response:
        return requests.post(f"{url}/v1/table/{table}/{path}", json=body(kind, n),
                             timeout=120)
    return send


def _merge(member: str) -> Send:
    """merge_insert's conditions are query parameters (its body is the Arrow rows)."""
    def send(url: str, table: str, kind: str, n: int) -> requests.Response:
        params = {"on": "id", member: condition(kind, n)}
        if member == "when_matched_update_all_filt":
            params["when_matched_update_all"] = "true"
        else:
            params["when_not_matched_by_source_delete"] = "true"
        query = urllib.parse.urlencode(params)
        return requests.post(f"{url}/v1/table/{table}/merge_insert?{query}",
                             data=table_body(5), headers=ARROW_HEADERS, timeout=120)
    return send


def _update_value(kind: str, n: int) -> dict[str, Any]:
    return {"updates": [[TARGET[KINDS[kind][0]], value(kind, n)]]}


ROUTES_WITH_SQL: dict[str, Send] = {
    "count_rows predicate": _json("count_rows", lambda k, n: {"predicate": condition(k, n)}),
    "count_rows filter": _json("count_rows", lambda k, n: {"filter": condition(k, n)}),
    "query filter": _json("query", lambda k, n: {"filter": condition(k, n), "k": 5}),
    "query projection": _json("query", lambda k, n: {"columns": {"v": value(k, n)}, "k": 5}),
    "query column_aliases": _json(
        "query", lambda k, n: {"columns": {"column_aliases": {"v": value(k, n)}}, "k": 5}),
    "explain_plan filter": _json("explain_plan",
                                 lambda k, n: {"query": {"filter": condition(k, n)}}),
    "explain_plan projection": _json(
        "explain_plan", lambda k, n: {"query": {"columns": {"v": value(k, n)}}}),
    "analyze_plan filter": _json("analyze_plan", lambda k, n: {"filter": condition(k, n)}),
    "delete predicate": _json("delete", lambda k, n: {"predicate": condition(k, n)}),
    "update value": _json("update", _update_value),
    "update where": _json("update", lambda k, n: {"updates": [["id", "id"]],
                                                  "predicate": condition(k, n)}),
    "add_columns expression": _json(
        "add_columns", lambda k, n: {"new_columns": [{"name": "v", "expression": value(k, n)}]}),
    "merge_insert when_matched_update_all_filt": _merge("when_matched_update_all_filt"),
    "merge_insert when_not_matched_by_source_delete_filt":
        _merge("when_not_matched_by_source_delete_filt"),
}


def sent(server: ServerProcess, send: Callable[[], requests.Response]) -> requests.Response:
    """``send()``'s response, once the server is seen to have survived the request."""
    try:
        resp: requests.Response | None = send()
    except requests.ConnectionError:
        resp = None
    assert server.alive, f"the server died: exit status {server.proc and server.proc.wait()}"
    assert resp is not None, "the server dropped the connection"
    return resp


def assert_alive(server: ServerProcess, table: str) -> None:
    """The process runs, and answers a normal query over every row."""
    assert server.alive, f"the server died\n{server.log_tail()}"
    resp = requests.post(f"{server.url}/v1/table/{table}/count_rows",
                         json={"predicate": "id < 10 AND s = 'a'"}, timeout=60)
    assert resp.status_code == 200, resp.text
    assert resp.json() == 10


def new_table(url: str, table: str) -> None:
    requests.post(f"{url}/v1/namespace/{table.split('$')[0]}/create",
                  json={"mode": "exist_ok"}, timeout=30)
    resp = requests.post(f"{url}/v1/table/{table}/create", data=table_body(),
                         headers=ARROW_HEADERS, timeout=60)
    assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One ``nsframe serve`` with the CONFIGURED limits in its config file."""
    base = tmp_path_factory.mktemp("expression-budget")
    config = base / "nsframe.toml"
    config.write_text("[limits]\n" + "".join(f"{k} = {v}\n" for k, v in CONFIGURED.items()))
    server = ServerProcess(str(base / "root"), base, "configured",
                           extra_args=["--config", str(config)])
    server.start()
    try:
        new_table(server.url, "ns$t")
        yield server
    finally:
        server.kill()


@pytest.fixture
def running(configured: ServerProcess) -> ServerProcess:
    if not configured.alive:  # a crash in an earlier test fails that test, not this one
        configured.start()
    return configured


@pytest.mark.parametrize("route", list(ROUTES_WITH_SQL))
def test_every_kind_of_chain_10x_past_the_limit_is_refused(running: ServerProcess,
                                                           route: str) -> None:
    send = ROUTES_WITH_SQL[route]
    for kind in KINDS:
        limit = limit_of(kind)
        n = 10 * CONFIGURED[limit]
        resp = sent(running, partial(send, running.url, "ns$t", kind, n))
        detail = assert_error(resp, 400, 13)["detail"]
        assert limit in detail and f"at most {CONFIGURED[limit]}" in detail, (kind, detail)
        assert len(detail) < 600  # the expression itself is not echoed back
        assert_alive(running, "ns$t")


@pytest.mark.parametrize("route", list(ROUTES_WITH_SQL))
def test_too_many_terms_is_refused(running: ServerProcess, route: str) -> None:
    """An IN list is one operator, but each of its values is a term to parse."""
    limit = CONFIGURED["max_expression_terms"]
    values = ",".join(str(i) for i in range(10 * limit))
    sql = f"id IN ({values})"
    resp = sent(running, lambda: _send_sql(running.url, route, sql))
    detail = assert_error(resp, 400, 13)["detail"]
    assert "max_expression_terms" in detail and f"at most {limit}" in detail
    assert_alive(running, "ns$t")


def _send_sql(url: str, route: str, sql: str) -> requests.Response:
    """``sql`` (a boolean) as the route's expression, sent as it is."""
    KINDS["as_is"] = ("bool", lambda n: sql)
    try:
        return ROUTES_WITH_SQL[route](url, "ns$t", "as_is", 0)
    finally:
        del KINDS["as_is"]


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``nsframe serve`` with the default limits."""
    base = tmp_path_factory.mktemp("expression-default")
    with cluster(str(base / "root"), 1, base) as (server,):
        new_table(server.url, "ns$t")
        yield server


# Chains of 3,000 terms, past the size that crashed the server. Before, the count, the
# query filter and the new column ended it with SIGSEGV (exit status -11), the delete
# dropped the connection; the update took its 3,000 terms, the projection reached Lance.
CRASHED = {
    "count_rows predicate": "concat_literal",
    "query filter": "plus_literal",
    "query projection": "concat_literal",
    "delete predicate": "plus",
    "update value": "concat_literal",
    "add_columns expression": "plus_literal",
}


@pytest.mark.parametrize("route", list(CRASHED))
def test_chains_that_crashed_the_server_are_refused(default_server: ServerProcess,
                                                    route: str) -> None:
    if not default_server.alive:
        default_server.start()
    send = ROUTES_WITH_SQL[route]
    resp = sent(default_server, lambda: send(default_server.url, "ns$t", CRASHED[route], 3000))
    detail = assert_error(resp, 400, 13)["detail"]
    assert "max_expression_chain" in detail
    assert f"at most {Limits().max_expression_chain}" in detail
    assert "IN (" in detail and "several requests" in detail
    assert_alive(default_server, "ns$t")


@pytest.mark.parametrize("route", list(ROUTES_WITH_SQL))
def test_growth_past_the_limit_is_refused_on_every_route(default_server: ServerProcess,
                                                        route: str) -> None:
    # SIGABRT on a count before (160 GB asked for); every route shares the one check.
    if not default_server.alive:
        default_server.start()
    sql = "cardinality(array_repeat(id, 100000000)) > 0"
    resp = sent(default_server, lambda: _send_sql(default_server.url, route, sql))
    detail = assert_error(resp, 400, 13)["detail"]
    assert "max_expression_growth" in detail
    assert f"at most {Limits().max_expression_growth}" in detail
    assert_alive(default_server, "ns$t")


# ------------------------------------------------------------------ realistic expressions
def test_realistic_expressions_near_the_default_limits_still_work(tmp_path: Path) -> None:
    """Long IN lists, a thousand ORs (as `delete_matching` sends for keys of two
    columns) and arithmetic chains just under `max_expression_chain` all pass."""
    limits = Limits()
    chain = limits.max_expression_chain - 4
    with serve_in_thread(tmp_path) as server:
        url = f"{server.url}/v1/table/ns$t"
        new_table(server.url, "ns$t")
        # A long IN list: one operator, 10,000 terms.
        keys = ",".join(str(i) for i in range(0, 20_000, 2))
        resp = requests.post(f"{url}/count_rows", json={"predicate": f"id IN ({keys})"})
        assert resp.status_code == 200, resp.text
        assert resp.json() == ROWS // 2
        # 1,000 ORs of comparisons; 1,000 keys of two columns (5,000 operators).
        ors = " OR ".join(f"id = {i}" for i in range(1000))
        resp = requests.post(f"{url}/count_rows", json={"predicate": ors})
        assert resp.status_code == 200, resp.text
        assert resp.json() == ROWS
        pairs = " OR ".join(f"(id = {i} AND s = 'a')" for i in range(0, 2000, 2))
        resp = requests.post(f"{url}/count_rows", json={"predicate": pairs})
        assert resp.status_code == 200, resp.text
        assert resp.json() == ROWS // 2
        # A projection whose chain is just under the limit, and a filter of every kind.
        total = "+".join(["x"] * chain)
        resp = requests.post(f"{url}/query", json={
            "filter": "id < 3 AND (x + 1) * 2 > 0 AND s LIKE 'a%' AND NOT flag IS NULL",
            "columns": {"id": "id", "y": "x * 2 + abs(x - 1) / 3", "total": total},
            "k": 0})
        assert resp.status_code == 200, resp.text
        # Writes: an update, a new column, a merge condition and a delete by an IN list.
        resp = requests.post(f"{url}/update", json={
            "updates": [["x", total]], "predicate": ors})
        assert resp.status_code == 200, resp.text
        assert resp.json()["updated_rows"] == ROWS
        resp = requests.post(f"{url}/add_columns", json={"new_columns": [
            {"name": "label", "expression": "concat(s, '-', CAST(id AS string))"}]})
        assert resp.status_code == 200, resp.text
        query = urllib.parse.urlencode({"on": "id", "when_matched_update_all": "true",
                                        "when_matched_update_all_filt":
                                            "target.id < 3 AND source.x >= 0"})
        resp = requests.post(f"{url}/merge_insert?{query}", headers=ARROW_HEADERS,
                             data=ipc_stream({"id": [1, 2], "x": [1.0, 2.0], "s": ["b", "b"],
                                              "flag": [False, False], "label": ["l", "l"]}))
        assert resp.status_code == 200, resp.text
        resp = requests.post(f"{url}/delete", json={"predicate": f"id IN ({keys})"})
        assert resp.status_code == 200, resp.text
        assert requests.post(f"{url}/count_rows", json={}).json() == ROWS // 2
