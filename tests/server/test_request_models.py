"""Request models: each operation's members are checked in one place, before its handler.

For a sample of operations, a member of the wrong type, an integer below its bound and an
unknown mode are each a 400 (code 13) whose detail names the member and says what is
allowed; nothing is written. Members may come from the query string where the model says
so, and a member sent both ways must agree.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
import requests

from nsframe.server._http.handler import Call
from nsframe.server._routes import ROUTES
from tests.support import ARROW_HEADERS, assert_error, ipc_stream


@pytest.fixture
def table(http: requests.Session, base_url: str, ns: str) -> str:
    resp = http.post(f"{base_url}/v1/table/{ns}$t/create",
                     data=ipc_stream({"id": [1, 2, 3], "text": ["a", "b", "c"]}),
                         headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    return f"{ns}$t"


def refused(resp: requests.Response, *words: str) -> str:
    """The detail of a 400 code 13, checked to hold each of ``words``."""
    detail = str(assert_error(resp, 400, 13)["detail"])
    for word in words:
        assert word in detail, detail
    return detail


def unchanged(http: requests.Session, base_url: str, table: str) -> None:
    assert http.post(f"{base_url}/v1/table/{table}/describe", json={}).json()["version"] == 1
    assert http.post(f"{base_url}/v1/table/{table}/count_rows", json={}).json() == 3


# ------------------------------------------------------------ one place, every route
def test_every_handler_takes_the_model_its_route_declares() -> None:
    for route in ROUTES:
        hints = typing.get_type_hints(route.handler)
        annotation = hints[next(iter(hints))]
        assert typing.get_origin(annotation) is Call, route.operation
        assert typing.get_args(annotation) == (route.model,), route.operation


# ------------------------------------------------------------------- wrong types
@pytest.mark.parametrize(("action", "body", "member", "allowed"), [
    pytest.param("query", {"k": "10"}, "'k'", "an integer >= 0", id="query-k-string"),
    pytest.param("query", {"k": True}, "'k'", "an integer >= 0", id="query-k-bool"),
    pytest.param("query", {"prefilter": 1}, "'prefilter'", "true or false", id="query-prefilter"),
    pytest.param("query", {"vector": {"single_vector": [1, "x"]}}, "'vector.single_vector[1]'",
                 "a number", id="query-vector-item"),
    pytest.param("query", {"full_text_query": {"structured_query": {"query": {
        "boolean": {"must": [{"match": {"terms": 3}}]}}}}},
        "'full_text_query.structured_query.query.boolean.must[0].match.terms'", "a string",
        id="query-nested-fts"),
    pytest.param("describe", {"branch": ["dev"]}, "'branch'", "a string", id="describe-branch"),
    pytest.param("delete", {"predicate": 1}, "'predicate'", "a string", id="delete-predicate"),
    pytest.param("restore", {"version": "1"}, "'version'", "an integer >= 0",
                 id="restore-version"),
    pytest.param("tags/create", {"tag": "x", "version": 1, "branch": 2}, "'branch'",
                 "a string", id="tag-branch"),
    pytest.param("optimize", {"optimize_indices": "yes"}, "'optimize_indices'",
                 "true or false", id="optimize-flag"),
    pytest.param("create_index", {"column": "id", "index_type": "BTREE", "replace": "no"},
                 "'replace'", "true or false", id="index-replace"),
])
def test_wrong_type_names_the_member_and_what_is_allowed(
    http: requests.Session, base_url: str, table: str,
    action: str, body: dict[str, Any], member: str, allowed: str
) -> None:
    resp = http.post(f"{base_url}/v1/table/{table}/{action}", json=body)
    refused(resp, member, allowed)
    unchanged(http, base_url, table)


def test_a_missing_required_member_says_what_to_give(
    http: requests.Session, base_url: str, table: str
) -> None:
    for action, body, member, allowed in (
        ("restore", {}, "'version'", "an integer >= 0"),
        ("tags/create", {"version": 1}, "'tag'", "tag name"),
        ("branches/create", {}, "'name'", "branch name"),
    ):
        detail = refused(http.post(f"{base_url}/v1/table/{table}/{action}", json=body),
                         member, allowed)
        assert "required" in detail
    unchanged(http, base_url, table)


# --------------------------------------------------------------- negative bounds
@pytest.mark.parametrize(("action", "body", "member"), [
    pytest.param("query", {"nprobes": -1}, "'nprobes'", id="query-nprobes"),
    pytest.param("query", {"ef": -3}, "'ef'", id="query-ef"),
    pytest.param("query", {"refine_factor": -1}, "'refine_factor'", id="query-refine"),
    pytest.param("query", {"version": -1}, "'version'", id="query-version"),
    pytest.param("tags/create", {"tag": "x", "version": -1}, "'version'", id="tag-version"),
    pytest.param("branches/create", {"name": "b", "from_version": -2}, "'from_version'",
                 id="branch-from-version"),
    pytest.param("version/list", {"limit": -1}, "'limit'", id="versions-limit"),
])
def test_negative_bound_is_400(
    http: requests.Session, base_url: str, table: str,
    action: str, body: dict[str, Any], member: str
) -> None:
    resp = http.post(f"{base_url}/v1/table/{table}/{action}", json=body)
    detail = refused(resp, member, ">= 0")
    assert "got -" in detail
    unchanged(http, base_url, table)


def test_positive_build_options_refuse_zero(
    http: requests.Session, base_url: str, table: str
) -> None:
    for action, body, member in (
        ("optimize", {"target_rows_per_fragment": 0}, "'target_rows_per_fragment'"),
        ("create_scalar_index", {"column": "text", "index_type": "FTS",
                                 "max_token_length": 0}, "'max_token_length'"),
    ):
        refused(http.post(f"{base_url}/v1/table/{table}/{action}", json=body), member, ">= 1")
    unchanged(http, base_url, table)


# ----------------------------------------------------------------- unknown modes
@pytest.mark.parametrize(("path", "kwargs", "member", "choices"), [
    pytest.param("/v1/namespace/{ns}$n/create", {"json": {"mode": "replace"}}, "'mode'",
                 "Create, ExistOk, Overwrite", id="namespace-create"),
    pytest.param("/v1/namespace/{ns}/drop", {"json": {"mode": "ignore"}}, "'mode'",
                 "Fail, Skip", id="namespace-drop-mode"),
    pytest.param("/v1/namespace/{ns}/drop", {"json": {"behavior": "force"}}, "'behavior'",
                 "Restrict, Cascade", id="namespace-drop-behavior"),
    pytest.param("/v1/table/{ns}$n/create", {"params": {"mode": "upsert"},
                                              "data": ipc_stream({"id": [1]}),
                                              "headers": ARROW_HEADERS},
                 "query parameter 'mode'", "Create, ExistOk, Overwrite", id="table-create"),
    pytest.param("/v1/table/{t}/insert", {"params": {"mode": "merge"},
                                          "data": ipc_stream({"id": [9], "text": ["z"]}),
                                          "headers": ARROW_HEADERS},
                 "query parameter 'mode'", "Append, Overwrite", id="insert"),
    pytest.param("/v1/table/{t}/query", {"json": {"distance_type": "manhattan"}},
                 "'distance_type'", "cosine", id="query-distance"),
])
def test_unknown_mode_is_400(
    http: requests.Session, base_url: str, ns: str, table: str,
    path: str, kwargs: dict[str, Any], member: str, choices: str
) -> None:
    resp = http.post(base_url + path.format(ns=ns, t=table), **kwargs)
    refused(resp, member, choices)
    unchanged(http, base_url, table)
    assert http.post(f"{base_url}/v1/namespace/{ns}/exists", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{ns}$n/exists", json={}).status_code == 404
    assert http.post(f"{base_url}/v1/table/{ns}$n/exists", json={}).status_code == 404


def test_modes_in_any_case(http: requests.Session, base_url: str, ns: str) -> None:
    for mode in ("exist_ok", "ExistOk", "EXISTOK", "exist-ok"):
        resp = http.post(f"{base_url}/v1/namespace/{ns}/create", json={"mode": mode})
        assert resp.status_code == 200, resp.text
    for mode in ("skip", "Skip", "SKIP"):
        resp = http.post(f"{base_url}/v1/namespace/{ns}$gone/drop", json={"mode": mode})
        assert resp.status_code == 204, resp.text


# ------------------------------------------------------------ what stays accepted
def test_integral_numbers_and_unknown_members_are_accepted(
    http: requests.Session, base_url: str, table: str
) -> None:
    # 10.0 has always counted as an integer; upstream clients send members we ignore.
    resp = http.post(f"{base_url}/v1/table/{table}/count_rows",
                     json={"version": 1.0, "predicate": "id > 1", "extra": {"any": [1]}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == 2
    resp = http.post(f"{base_url}/v1/table/{table}/query",
                     json={"k": 2.0, "vector": None, "future_member": True})
    assert resp.status_code == 200, resp.text
    refused(http.post(f"{base_url}/v1/table/{table}/query", json={"k": 2.5}), "'k'")


# ----------------------------------------------------- query string and JSON body
def test_members_from_the_query_string(
    http: requests.Session, base_url: str, table: str
) -> None:
    url = f"{base_url}/v1/table/{table}/count_rows"
    for method in ("GET", "POST"):
        resp = http.request(method, url, params={"predicate": "id >= 2", "version": "1"})
        assert resp.status_code == 200, resp.text
        assert resp.json() == 2
    refused(http.get(url, params={"version": "one"}), "query parameter 'version'",
            "an integer >= 0")
    refused(http.get(url, params={"version": "-1"}), "query parameter 'version'", ">= 0")
    listed = http.get(f"{base_url}/v1/table/{table}/version/list",
                      params={"descending": "TRUE", "limit": "1"})
    assert [v["version"] for v in listed.json()["versions"]] == [1], listed.text
    refused(http.get(f"{base_url}/v1/table/{table}/version/list",
                     params={"descending": "maybe"}), "'descending'", "true or false")


def test_a_member_sent_both_ways_must_agree(
    http: requests.Session, base_url: str, table: str
) -> None:
    url = f"{base_url}/v1/table/{table}/count_rows"
    refused(http.post(url, params={"predicate": "id > 1"}, json={"predicate": "id > 2"}),
            "'predicate'", "query string")
    same = http.post(url, params={"version": "1"}, json={"version": 1})
    assert same.status_code == 200 and same.json() == 3, same.text
    refused(http.post(f"{base_url}/v1/table/{table}/index/list", params={"limit": "1"},
                      json={"limit": 2}), "'limit'")
