"""Names are user data: anything that could leave the storage root is a 400."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream
from tests.support.stores import StoreView

# Each is sent percent-encoded as one identifier part; the server sees the decoded text.
# ('.' and '..' go encoded, else the client resolves them; test_raw_dot_segments sends
# them literally.)
BAD_PARTS = [
    pytest.param("%2E%2E", id="dotdot-encoded"),
    pytest.param("%2E", id="dot-encoded"),
    pytest.param("a%2Fb", id="slash"),
    pytest.param("%2Fetc", id="leading-slash"),
    pytest.param("..%2F..%2Fescape", id="dotdot-slash"),
    pytest.param("a%5Cb", id="backslash"),
    pytest.param("..%5Cescape", id="dotdot-backslash"),
    pytest.param("a%00b", id="nul"),
    pytest.param("a%0Ab", id="newline"),
    pytest.param("a%0Db", id="carriage-return"),
    pytest.param("a%7Fb", id="del"),
    pytest.param("a%09b", id="tab"),
    pytest.param("a%E2%80%AEb", id="bidi-override"),
    pytest.param("a%FF", id="invalid-utf8"),
    pytest.param("a%ED%A0%80", id="utf8-encoded-surrogate"),
    pytest.param("a%C0%AF", id="overlong-utf8-slash"),
    pytest.param("x" * 256, id="overlong"),
    pytest.param("%C3%A9" * 101, id="overlong-in-bytes"),
]

# Identifiers (with the default '$' delimiter) that have an empty part; NS is the test's.
EMPTY_PARTS = ["NS$$b", "$NS", "NS$", "$$", "NS$a$$"]


@pytest.fixture
def outside(store: StoreView) -> Iterator[None]:
    """Fail the test if anything appears next to the storage root (in its parent folder,
    or at the top of its bucket).

    (Higher directories are shared with other processes, so they are not compared.)
    """
    before_parent = store.neighbours()
    yield
    assert store.neighbours() == before_parent


def _raw_post(base_url: str, path: str, body: bytes = b"{}") -> tuple[int, bytes]:
    """POST with the path sent byte for byte (no client-side dot-segment cleanup)."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _namespaces_under(store: StoreView, ns: str) -> set[str]:
    """Every file the server keeps under its root, but for its liveness records."""
    return {key for key in store.all_keys() if not key.startswith("_nsframe/")}


@pytest.mark.parametrize("part", BAD_PARTS)
def test_bad_namespace_name_is_400(
    http: requests.Session, base_url: str, ns: str, store: StoreView, outside: None, part: str
) -> None:
    before = _namespaces_under(store, ns)
    for ident in [part, f"{ns}${part}", f"{ns}${part}$child"]:
        resp = http.post(f"{base_url}/v1/namespace/{ident}/create", json={})
        body = assert_error(resp, 400, 13)
        assert "name" in body["detail"] or "identifier" in body["detail"]
    assert _namespaces_under(store, ns) == before
    listed = http.get(f"{base_url}/v1/namespace/{ns}/list").json()["namespaces"]
    assert listed == []


@pytest.mark.parametrize("part", BAD_PARTS)
def test_bad_table_name_is_400(
    http: requests.Session, base_url: str, ns: str, store: StoreView, outside: None, part: str
) -> None:
    before = _namespaces_under(store, ns)
    stream = ipc_stream({"x": [1]})
    assert_error(http.post(f"{base_url}/v1/table/{ns}${part}/create", data=stream,
                           headers=ARROW_HEADERS), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ns}${part}/declare", json={}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ns}${part}/insert", data=stream,
                           headers=ARROW_HEADERS), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{part}$t/create", data=stream,
                           headers=ARROW_HEADERS), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ns}${part}/drop", json={}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/namespace/{ns}${part}/drop", json={}), 400, 13)
    assert _namespaces_under(store, ns) == before
    tables = http.get(f"{base_url}/v1/namespace/{ns}/table/list").json()["tables"]
    assert tables == []


@pytest.mark.parametrize(("path", "status"), [
    ("/v1/namespace/../create", 400),
    ("/v1/namespace/./create", 400),
    ("/v1/namespace/x$../create", 400),
    ("/v1/namespace/../../../create", 404),  # three segments where the route has one: no route
    ("/v1/table/x$../create", 400),
    ("/v1/table/x$..$..$t/create", 400),
])
def test_raw_dot_segments_never_reach_storage(
    base_url: str, store: StoreView, outside: None, path: str, status: int
) -> None:
    before = store.children()
    assert _raw_post(base_url, path)[0] == status
    assert store.children() == before


@pytest.mark.parametrize("ident", EMPTY_PARTS)
def test_empty_part_is_400(
    http: requests.Session, base_url: str, ns: str, store: StoreView, outside: None, ident: str
) -> None:
    before = _namespaces_under(store, ns)
    ident = ident.replace("NS", ns)
    assert_error(http.post(f"{base_url}/v1/namespace/{ident}/create", json={}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ident}/declare", json={}), 400, 13)
    assert _namespaces_under(store, ns) == before


def test_empty_part_in_body_id_is_400(
    http: requests.Session, base_url: str, ns: str, outside: None
) -> None:
    assert_error(http.post(f"{base_url}/v1/namespace/{ns}$a/create", json={"id": [ns, ""]}),
                 400, 13)
    assert_error(http.post(f"{base_url}/v1/namespace/{ns}$a/create", json={"id": [ns, ".."]}),
                 400, 13)
    assert http.get(f"{base_url}/v1/namespace/{ns}/list").json()["namespaces"] == []


def test_deep_nesting_that_exceeds_path_limits_is_400(
    http: requests.Session, base_url: str, ns: str, outside: None
) -> None:
    """Each part is legal, but the path they make together is too long for the disk."""
    long = "n" * 200
    ident = ns
    status = 200
    depth = 0
    while status == 200 and depth < 40:
        ident = f"{ident}${long}"
        resp = http.post(f"{base_url}/v1/namespace/{ident}/create", json={})
        status = resp.status_code
        depth += 1
    assert status == 400, resp.text
    assert "nests too deep" in assert_error(resp, 400, 13)["detail"]
    # The same holds for a table at that depth: its path (`tables/<name>.lance`) is longer
    # than that of the namespace refused above.
    parent = ident.rsplit("$", 1)[0]
    resp = http.post(f"{base_url}/v1/table/{parent}${long}/declare", json={})
    assert "nests too deep" in assert_error(resp, 400, 13)["detail"]
    resp = http.post(f"{base_url}/v1/table/{ident}$t/create", data=ipc_stream({"x": [1]}),
                     headers=ARROW_HEADERS)
    assert "nests too deep" in assert_error(resp, 400, 13)["detail"]
    drop = http.post(f"{base_url}/v1/namespace/{ns}/drop", json={"behavior": "cascade"})
    assert drop.status_code == 200, drop.text


@pytest.mark.parametrize("name", [
    pytest.param("données", id="latin"),
    pytest.param("表格", id="cjk"),
    pytest.param("emoji-🦀", id="emoji"),
    pytest.param("family-\U0001F468\u200d\U0001F469\u200d\U0001F467", id="emoji-zwj-sequence"),
    pytest.param("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", id="persian-zwnj"),
    pytest.param("with space", id="space"),
    pytest.param("dots.in.name", id="dots"),
    pytest.param("...", id="three-dots"),
    pytest.param(".hidden", id="leading-dot"),
    pytest.param("tables", id="layout-word-tables"),
    pytest.param("namespaces", id="layout-word-namespaces"),
    pytest.param("namespace.json", id="layout-file-name"),
    pytest.param("x.lance", id="lance-suffix"),
    pytest.param("x.declared", id="declared-suffix"),
    pytest.param("n" * 200, id="longest"),
])
def test_unusual_but_safe_names_work(
    http: requests.Session, base_url: str, ns: str, store: StoreView, outside: None, name: str
) -> None:
    resp = http.post(f"{base_url}/v1/namespace/{ns}${name}/create", json={})
    assert resp.status_code == 200, resp.text
    assert http.get(f"{base_url}/v1/namespace/{ns}/list").json()["namespaces"] == [name]
    resp = http.post(f"{base_url}/v1/table/{ns}${name}$t/create",
                     data=ipc_stream({"x": [1, 2]}), headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    resp = http.post(f"{base_url}/v1/table/{ns}${name}/create", data=ipc_stream({"y": [7]}),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert http.post(f"{base_url}/v1/table/{ns}${name}$t/count_rows", json={}).json() == 2
    assert http.post(f"{base_url}/v1/table/{ns}${name}/count_rows", json={}).json() == 1
    tables = http.get(f"{base_url}/v1/namespace/{ns}/table/list").json()["tables"]
    assert tables == [name]
    tables = http.get(f"{base_url}/v1/namespace/{ns}${name}/table/list").json()["tables"]
    assert tables == ["t"]
    # Everything lives below the root.
    assert store.escaped() == []
    drop = http.post(f"{base_url}/v1/namespace/{ns}${name}/drop", json={"behavior": "cascade"})
    assert drop.status_code == 200, drop.text
    assert http.post(f"{base_url}/v1/table/{ns}${name}/count_rows", json={}).json() == 1
