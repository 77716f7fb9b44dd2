"""The error body of every failure: members, statuses, codes, and nothing leaked."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream
from tests.support.stores import StoreView

JSON_HEADERS = {"Content-Type": "application/json"}
MEMBERS = {"type", "title", "status", "detail", "instance", "code", "error"}


def _check_body(resp: requests.Response, status: int, code: int, type_: str,
                path: str) -> dict[str, Any]:
    body = assert_error(resp, status, code)
    assert set(body) >= MEMBERS
    assert body["type"] == type_
    assert isinstance(body["title"], str) and body["title"]
    assert body["status"] == resp.status_code == status
    assert isinstance(body["detail"], str) and len(body["detail"]) > 10
    assert body["instance"] == path
    assert body["error"] == body["detail"]
    assert isinstance(body["code"], int) and 0 <= body["code"] <= 23
    assert resp.headers["content-type"].startswith("application/json")
    return body


@pytest.fixture
def table(http: requests.Session, base_url: str, ns: str) -> str:
    resp = http.post(f"{base_url}/v1/table/{ns}$t/create",
                     data=ipc_stream({"id": [1, 2, 3], "name": ["a", "b", "c"]}),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    return f"{ns}$t"


# ------------------------------------------------------------ members per status
def test_400_body(http: requests.Session, base_url: str, ns: str) -> None:
    path = f"/v1/namespace/{ns}$a/create"
    resp = http.post(base_url + path, json={"mode": "sometimes"})
    body = _check_body(resp, 400, 13, "/errors/bad-request", path)
    assert body["title"] == "Malformed request"
    assert "sometimes" in body["detail"] and "ExistOk" in body["detail"]


def test_404_body(http: requests.Session, base_url: str, ns: str) -> None:
    path = f"/v1/table/{ns}$missing/describe"
    body = _check_body(http.post(base_url + path, json={}), 404, 4, "/errors/not-found-error",
                       path)
    assert body["title"] == "Not found Error"
    assert "missing" in body["detail"]
    path = f"/v1/namespace/{ns}$missing/describe"
    body = _check_body(http.post(base_url + path, json={}), 404, 1, "/errors/not-found-error",
                       path)
    assert "missing" in body["detail"]


def test_409_bodies(http: requests.Session, base_url: str, ns: str, table: str) -> None:
    path = f"/v1/namespace/{ns}/create"
    body = _check_body(http.post(base_url + path, json={}), 409, 2, "/errors/conflict", path)
    assert ns in body["detail"]
    path = f"/v1/table/{table}/create"
    _check_body(http.post(base_url + path, data=ipc_stream({"id": [1]}),
                          headers=ARROW_HEADERS), 409, 5,
                "/errors/conflict", path)
    path = f"/v1/namespace/{ns}/drop"
    body = _check_body(http.post(base_url + path, json={}), 409, 3, "/errors/conflict", path)
    assert "Cascade" in body["detail"]


def test_drop_missing_namespace_body(http: requests.Session, base_url: str, ns: str) -> None:
    """spec/SEED_SPEC.md: 400 for a missing namespace with mode Fail, with a full error body."""
    path = f"/v1/namespace/{ns}$gone/drop"
    body = _check_body(http.post(base_url + path, json={"mode": "fail"}), 400, 1,
                       "/errors/bad-request", path)
    assert "gone" in body["detail"]


def test_router_404(http: requests.Session, base_url: str) -> None:
    for path in ["/v1/nothing/here", "/v2/namespace/x/list", "/", "/v1/table/x/no_such_op"]:
        resp = http.post(base_url + path, json={})
        body = _check_body(resp, 404, 0, "/errors/not-found-error", path)
        assert path in body["detail"]


def test_router_405(http: requests.Session, base_url: str, ns: str) -> None:
    path = f"/v1/namespace/{ns}/create"
    resp = http.get(base_url + path)
    body = _check_body(resp, 405, 0, "/errors/method-not-allowed", path)
    assert body["title"] == "Method Not Allowed"
    assert "GET" in body["detail"]
    assert "POST" in resp.headers.get("allow", "")
    resp = http.delete(f"{base_url}/v1/table")
    assert resp.status_code == 405
    assert "GET" in resp.headers.get("allow", "")


def test_instance_is_the_request_path(http: requests.Session, base_url: str, ns: str) -> None:
    resp = http.post(f"{base_url}/v1/namespace/{ns}$x/describe", params={"delimiter": "$"},
                     json={})
    assert assert_error(resp, 404, 1)["instance"] == urlsplit(resp.url).path


# ----------------------------------------------------------------- bad JSON bodies
@pytest.mark.parametrize("raw", [
    pytest.param(b"{", id="truncated"),
    pytest.param(b"{'mode': 'Create'}", id="single-quotes"),
    pytest.param(b'{"mode": "Create",}', id="trailing-comma"),
    pytest.param(b"\xff\xfe{}", id="not-utf8"),
    pytest.param(b"mode=Create", id="form-encoded"),
])
def test_malformed_json_is_400(http: requests.Session, base_url: str, ns: str,
                               raw: bytes) -> None:
    path = f"/v1/namespace/{ns}$a/create"
    resp = http.post(base_url + path, data=raw, headers={"Content-Type": "application/json"})
    body = _check_body(resp, 400, 13, "/errors/bad-request", path)
    assert "JSON" in body["detail"]
    assert http.post(f"{base_url}/v1/namespace/{ns}$a/exists", json={}).status_code == 404


@pytest.mark.parametrize("raw", [
    pytest.param(b"[]", id="array"),
    pytest.param(b'[{"mode": "Create"}]', id="array-of-object"),
    pytest.param(b'"Create"', id="string"),
    pytest.param(b"42", id="number"),
    pytest.param(b"null", id="null"),
    pytest.param(b"true", id="bool"),
])
def test_json_that_is_not_an_object_is_400(
    http: requests.Session, base_url: str, ns: str, raw: bytes
) -> None:
    path = f"/v1/namespace/{ns}$a/create"
    resp = http.post(base_url + path, data=raw, headers={"Content-Type": "application/json"})
    body = _check_body(resp, 400, 13, "/errors/bad-request", path)
    assert "object" in body["detail"]
    assert http.post(f"{base_url}/v1/namespace/{ns}$a/exists", json={}).status_code == 404


@pytest.mark.parametrize("raw", [
    pytest.param(b'{"properties": {"k": "\\ud800"}}', id="in-value"),
    pytest.param(b'{"properties": {"\\udfff": "v"}}', id="in-key"),
])
def test_lone_surrogate_in_json_is_400(
    http: requests.Session, base_url: str, ns: str, raw: bytes
) -> None:
    resp = http.post(f"{base_url}/v1/namespace/{ns}$a/create", data=raw, headers=JSON_HEADERS)
    assert "surrogate" in assert_error(resp, 400, 13)["detail"]
    assert http.post(f"{base_url}/v1/namespace/{ns}$a/exists", json={}).status_code == 404


def test_deeply_nested_json_is_400(http: requests.Session, base_url: str, ns: str) -> None:
    raw = b'{"properties": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    resp = http.post(f"{base_url}/v1/namespace/{ns}$a/create", data=raw, headers=JSON_HEADERS)
    assert_error(resp, 400, 13)


# ------------------------------------------------------------------ wrong types
@pytest.mark.parametrize(("path", "body", "member"), [
    pytest.param("/v1/table/{t}/describe", {"version": "1"}, "version", id="version-string"),
    pytest.param("/v1/table/{t}/describe", {"version": 1.5}, "version", id="version-float"),
    pytest.param("/v1/table/{t}/describe", {"version": True}, "version", id="version-bool"),
    pytest.param("/v1/table/{t}/count_rows", {"version": [1]}, "version", id="version-list"),
    pytest.param("/v1/table/{t}/count_rows", {"predicate": {"id": 1}}, "predicate",
                 id="predicate-object"),
    pytest.param("/v1/table/{t}/delete", {"predicate": 1}, "predicate", id="predicate-int"),
    pytest.param("/v1/table/{t}/describe", {"branch": 3}, "branch", id="branch-int"),
    pytest.param("/v1/table/{t}/describe", {"id": "x"}, "id", id="id-string"),
    pytest.param("/v1/table/{t}/describe", {"context": "x"}, "context", id="context-string"),
    pytest.param("/v1/namespace/{ns}/drop", {"mode": 1}, "mode", id="mode-int"),
    pytest.param("/v1/namespace/{ns}/drop", {"behavior": ["Cascade"]}, "behavior",
                 id="behavior-list"),
    pytest.param("/v1/namespace/{ns}$n/create", {"properties": "a=b"}, "properties",
                 id="properties-string"),
    pytest.param("/v1/table/{ns}$d/declare", {"properties": []}, "properties",
                 id="declare-properties-list"),
])
def test_wrong_field_type_is_400(
    http: requests.Session, base_url: str, ns: str, table: str,
    path: str, body: dict[str, Any], member: str
) -> None:
    url = base_url + path.format(t=table, ns=ns)
    err = assert_error(http.post(url, json=body), 400, 13)
    assert member in err["detail"], err["detail"]
    # Nothing changed.
    assert http.post(f"{base_url}/v1/table/{table}/count_rows", json={}).json() == 3
    assert http.post(f"{base_url}/v1/namespace/{ns}/exists", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{ns}$n/exists", json={}).status_code == 404
    assert http.post(f"{base_url}/v1/table/{ns}$d/exists", json={}).status_code == 404


@pytest.mark.parametrize(("method", "path", "kwargs", "member"), [
    pytest.param("POST", "/v1/table/{t}/describe", {"json": {"version": -1}}, "version",
                 id="describe-version"),
    pytest.param("POST", "/v1/table/{t}/count_rows", {"json": {"version": -5}}, "version",
                 id="count-version"),
    pytest.param("GET", "/v1/table/{t}/count_rows", {"params": {"version": "-1"}}, "version",
                 id="count-version-query"),
    pytest.param("GET", "/v1/namespace/{ns}/list", {"params": {"limit": "-1"}}, "limit",
                 id="list-limit"),
    pytest.param("GET", "/v1/namespace/{ns}/table/list", {"params": {"limit": "-10"}},
                 "limit", id="table-list-limit"),
    pytest.param("GET", "/v1/table", {"params": {"limit": "-1"}}, "limit", id="all-limit"),
    pytest.param("POST", "/v1/table/{t}/restore", {"json": {"version": -1}}, "version",
                 id="restore-version"),
    pytest.param("POST", "/v1/table/{t}/query", {"json": {"k": -1}}, "k", id="query-k"),
    pytest.param("POST", "/v1/table/{t}/query", {"json": {"k": 1, "offset": -2}}, "offset",
                 id="query-offset"),
])
def test_negative_integer_is_400(
    http: requests.Session, base_url: str, ns: str, table: str,
    method: str, path: str, kwargs: dict[str, Any], member: str
) -> None:
    url = base_url + path.format(t=table, ns=ns)
    err = assert_error(http.request(method, url, **kwargs), 400, 13)
    assert member in err["detail"], err["detail"]
    assert ">= 0" in err["detail"] or "negative" in err["detail"], err["detail"]
    assert http.post(f"{base_url}/v1/table/{table}/describe", json={}).json()["version"] == 1


@pytest.mark.parametrize("version", [2**63, 2**70, 10**30])
def test_huge_integer_is_a_client_error(
    http: requests.Session, base_url: str, table: str, version: int
) -> None:
    resp = http.post(f"{base_url}/v1/table/{table}/describe", json={"version": version})
    assert "at most 9223372036854775807" in assert_error(resp, 400, 13)["detail"]


# ----------------------------------------------------------------- nothing leaks
@pytest.mark.parametrize(("path", "kwargs", "status", "code"), [
    pytest.param("/v1/table/{t}/count_rows", {"json": {"predicate": "nope > 1"}}, 400, 13,
                 id="unknown-column"),
    pytest.param("/v1/table/{t}/count_rows", {"json": {"predicate": "id >"}}, 400, 13,
                 id="parse-error"),
    pytest.param("/v1/table/{t}/delete", {"json": {"predicate": "id IN ("}}, 400, 13,
                 id="delete-parse"),
    pytest.param("/v1/table/{t}/insert", {"data": b"\x00" * 64, "headers": ARROW_HEADERS},
                 400, 13, id="bad-arrow"),
    pytest.param("/v1/table/{t}/insert", {"data": ipc_stream({"id": ["x"]}),
                                          "headers": ARROW_HEADERS}, 400, 20, id="mismatch"),
    pytest.param("/v1/table/{t}/describe", {"json": {"version": 77}}, 404, 11,
                 id="missing-version"),
])
def test_no_paths_or_traces_in_lance_errors(
    http: requests.Session, base_url: str, table: str, store: StoreView, path: str,
    kwargs: dict[str, Any], status: int, code: int
) -> None:
    resp = http.post(base_url + path.format(t=table), **kwargs)
    body = assert_error(resp, status, code)
    for text in (body["detail"], resp.text):
        assert store.root not in text and "://" not in text
        assert ".rs:" not in text
        assert "site-packages" not in text
        assert "Traceback" not in text
        assert "/runner/" not in text
