"""Namespaces over HTTP: create modes, nesting, listing pages, describe, exists, drop."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, table_location
from tests.support.paging import walk_pages
from tests.support.stores import StoreView


def _create(http: requests.Session, base_url: str, ident: str, **body: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/namespace/{ident}/create", json=body)


def _drop(http: requests.Session, base_url: str, ident: str, **body: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/namespace/{ident}/drop", json=body)


def _exists(http: requests.Session, base_url: str, ident: str) -> bool:
    resp = http.post(f"{base_url}/v1/namespace/{ident}/exists", json={})
    assert resp.status_code in (200, 404), resp.text
    if resp.status_code == 404:
        assert_error(resp, 404, 1)
    return resp.status_code == 200


def _describe(http: requests.Session, base_url: str, ident: str) -> dict[str, Any]:
    resp = http.post(f"{base_url}/v1/namespace/{ident}/describe", json={})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _children(http: requests.Session, base_url: str, ident: str, **params: Any) -> list[str]:
    resp = http.get(f"{base_url}/v1/namespace/{ident}/list", params=params)
    assert resp.status_code == 200, resp.text
    names: list[str] = resp.json()["namespaces"]
    return names


def _make_table(http: requests.Session, base_url: str, ident: str) -> None:
    resp = http.post(f"{base_url}/v1/table/{ident}/create", data=ipc_stream({"x": [1, 2, 3]}),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text


def _count(http: requests.Session, base_url: str, ident: str) -> int:
    resp = http.post(f"{base_url}/v1/table/{ident}/count_rows", json={})
    assert resp.status_code == 200, resp.text
    n: int = resp.json()
    return n


# ------------------------------------------------------------------------- create
def test_create_returns_properties_and_describe_shows_them(
    http: requests.Session, base_url: str, ns: str
) -> None:
    resp = _create(http, base_url, f"{ns}$a", properties={"owner": "ann", "tier": "gold"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["properties"] == {"owner": "ann", "tier": "gold"}
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {"owner": "ann", "tier": "gold"}


def test_create_on_existing_is_409_code_2_and_keeps_properties(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$a", properties={"k": "1"}).status_code == 200
    assert_error(_create(http, base_url, f"{ns}$a", properties={"k": "2"}), 409, 2)
    assert_error(
        _create(http, base_url, f"{ns}$a", mode="Create", properties={"k": "2"}), 409, 2
    )
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {"k": "1"}


@pytest.mark.parametrize("mode", ["ExistOk", "exist_ok", "EXISTOK", "existok", "Exist_Ok"])
def test_exist_ok_keeps_properties(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    assert _create(http, base_url, f"{ns}$a", properties={"k": "1"}).status_code == 200
    resp = _create(http, base_url, f"{ns}$a", mode=mode, properties={"k": "2"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["properties"] == {"k": "1"}
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {"k": "1"}


def test_exist_ok_on_missing_creates(http: requests.Session, base_url: str, ns: str) -> None:
    resp = _create(http, base_url, f"{ns}$fresh", mode="exist_ok", properties={"k": "v"})
    assert resp.status_code == 200, resp.text
    assert _describe(http, base_url, f"{ns}$fresh")["properties"] == {"k": "v"}


@pytest.mark.parametrize("mode", ["Overwrite", "overwrite", "OVERWRITE"])
def test_overwrite_replaces_properties(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    assert _create(http, base_url, f"{ns}$a", properties={"k": "1", "old": "x"}).status_code == 200
    resp = _create(http, base_url, f"{ns}$a", mode=mode, properties={"k": "2"})
    assert resp.status_code == 200, resp.text
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {"k": "2"}


def test_overwrite_keeps_contents(http: requests.Session, base_url: str, ns: str) -> None:
    """Overwrite is about the namespace's properties; its tables are left alone."""
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    _make_table(http, base_url, f"{ns}$a$t")
    assert _create(http, base_url, f"{ns}$a", mode="overwrite").status_code == 200
    assert _count(http, base_url, f"{ns}$a$t") == 3


@pytest.mark.parametrize("mode", ["Replace", "create_or_fail", "  "])
def test_unknown_create_mode_is_400(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    body = assert_error(_create(http, base_url, f"{ns}$a", mode=mode), 400, 13)
    assert "mode" in body["detail"]
    assert not _exists(http, base_url, f"{ns}$a")


def test_create_mode_of_wrong_type_is_400(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert_error(_create(http, base_url, f"{ns}$a", mode=3), 400, 13)
    assert_error(_create(http, base_url, f"{ns}$a", properties={"k": 1}), 400, 13)
    assert_error(_create(http, base_url, f"{ns}$a", properties=["k"]), 400, 13)
    assert not _exists(http, base_url, f"{ns}$a")


# ---------------------------------------------------------------------- nesting
def test_nested_namespaces(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    assert _create(http, base_url, f"{ns}$a$b", properties={"depth": "2"}).status_code == 200
    assert _create(http, base_url, f"{ns}$a$b$c").status_code == 200
    assert _exists(http, base_url, f"{ns}$a$b$c")
    assert _describe(http, base_url, f"{ns}$a$b")["properties"] == {"depth": "2"}
    assert _children(http, base_url, ns) == ["a"]
    assert _children(http, base_url, f"{ns}$a") == ["b"]
    assert _children(http, base_url, f"{ns}$a$b") == ["c"]
    assert _children(http, base_url, f"{ns}$a$b$c") == []


def test_nested_create_needs_parent(http: requests.Session, base_url: str, ns: str) -> None:
    body = assert_error(_create(http, base_url, f"{ns}$missing$child"), 404, 1)
    assert "missing" in body["detail"]
    assert not _exists(http, base_url, f"{ns}$missing")
    assert _children(http, base_url, ns) == []


def test_other_delimiter(http: requests.Session, base_url: str, ns: str) -> None:
    resp = http.post(f"{base_url}/v1/namespace/{ns}.x/create", params={"delimiter": "."}, json={})
    assert resp.status_code == 200, resp.text
    assert _children(http, base_url, ns) == ["x"]
    resp = http.post(
        f"{base_url}/v1/namespace/{ns}::x/exists", params={"delimiter": "::"}, json={}
    )
    assert resp.status_code == 200, resp.text
    # With delimiter '.', a '$' is part of a name.
    resp = http.post(f"{base_url}/v1/namespace/{ns}.y$z/create", params={"delimiter": "."},
                     json={})
    assert resp.status_code == 200, resp.text
    assert _children(http, base_url, ns) == ["x", "y$z"]
    assert _children(http, base_url, f"{ns}.y$z", delimiter=".") == []


def test_root_namespace(http: requests.Session, base_url: str, ns: str) -> None:
    assert ns in _children(http, base_url, "$")
    # '%2E' is '.', sent encoded so that the client does not resolve it as a dot segment.
    assert ns in _children(http, base_url, "%2E", delimiter=".")
    assert ns in _children(http, base_url, ":", delimiter=":")
    assert _exists(http, base_url, "$")
    assert "properties" in _describe(http, base_url, "$")
    assert_error(_create(http, base_url, "$"), 409, 2)
    assert _create(http, base_url, "$", mode="exist_ok").status_code == 200
    resp = http.post(f"{base_url}/v1/namespace/%2E/drop", params={"delimiter": "."}, json={})
    assert_error(resp, 400, 13)
    assert _exists(http, base_url, ns)


def test_path_and_body_id_must_agree(http: requests.Session, base_url: str, ns: str) -> None:
    body = assert_error(_create(http, base_url, f"{ns}$a", id=[ns, "b"]), 400, 13)
    assert "id" in body["detail"]
    assert not _exists(http, base_url, f"{ns}$a")
    assert not _exists(http, base_url, f"{ns}$b")
    assert_error(_create(http, base_url, f"{ns}$a", id=f"{ns}$a"), 400, 13)
    assert_error(_create(http, base_url, f"{ns}$a", id=[ns, 1]), 400, 13)
    assert _create(http, base_url, f"{ns}$a", id=[ns, "a"]).status_code == 200
    assert _create(http, base_url, f"{ns}.b", id=[ns, "b"]).status_code == 400
    resp = http.post(f"{base_url}/v1/namespace/{ns}.b/create", params={"delimiter": "."},
                     json={"id": [ns, "b"]})
    assert resp.status_code == 200, resp.text
    assert _children(http, base_url, ns) == ["a", "b"]
    assert_error(_drop(http, base_url, f"{ns}$a", id=[ns, "b"]), 400, 13)
    assert _exists(http, base_url, f"{ns}$a") and _exists(http, base_url, f"{ns}$b")
    resp = http.post(f"{base_url}/v1/namespace/$/describe", json={"id": [ns]})
    assert_error(resp, 400, 13)
    resp = http.post(f"{base_url}/v1/namespace/$/describe", json={"id": []})
    assert resp.status_code == 200, resp.text


# ---------------------------------------------------------------------- listing
def _all_pages(
    http: requests.Session, base_url: str, ident: str, limit: int
) -> tuple[list[str], int]:
    found, pages = walk_pages(http, "GET", f"{base_url}/v1/namespace/{ident}/list",
                              "namespaces", limit)
    return list(found), pages


def test_list_pages(http: requests.Session, base_url: str, ns: str) -> None:
    names = ["b", "a", "é", "c1", "c0"]
    for name in names:
        assert _create(http, base_url, f"{ns}${name}").status_code == 200
    _make_table(http, base_url, f"{ns}$not_a_namespace")
    assert sorted(_children(http, base_url, ns)) == sorted(names)
    for limit, expected_pages in [(1, 5), (2, 3), (5, 1), (100, 1)]:
        seen, pages = _all_pages(http, base_url, ns, limit)
        assert sorted(seen) == sorted(names), limit
        assert len(seen) == len(set(seen)), f"a child listed twice at limit {limit}"
        assert pages == expected_pages, limit
    # A page that holds the last item but is full still says there may be more, or not:
    # either way, following it must end with nothing repeated (checked above).
    resp = http.get(f"{base_url}/v1/namespace/{ns}/list", params={"limit": 2})
    first = resp.json()
    assert first["page_token"], "a partial listing must carry a page_token"
    resp = http.get(f"{base_url}/v1/namespace/{ns}/list",
                    params={"limit": 2, "page_token": first["page_token"]})
    assert not set(resp.json()["namespaces"]) & set(first["namespaces"])


def test_list_post_and_json_limit(http: requests.Session, base_url: str, ns: str) -> None:
    for name in ["a", "b", "c"]:
        assert _create(http, base_url, f"{ns}${name}").status_code == 200
    resp = http.post(f"{base_url}/v1/namespace/{ns}/list", params={"limit": 2})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["namespaces"]) == 2


def test_list_limit_zero_or_missing_is_everything(
    http: requests.Session, base_url: str, ns: str
) -> None:
    for name in ["a", "b"]:
        assert _create(http, base_url, f"{ns}${name}").status_code == 200
    for params in [{}, {"limit": ""}, {"page_token": ""}]:
        resp = http.get(f"{base_url}/v1/namespace/{ns}/list", params=params)
        assert resp.status_code == 200, resp.text
        assert resp.json()["namespaces"] == ["a", "b"]
        assert not resp.json().get("page_token")


@pytest.mark.parametrize("limit", ["-1", "two", "1.5", "true"])
def test_list_bad_limit_is_400(
    http: requests.Session, base_url: str, ns: str, limit: str
) -> None:
    body = assert_error(
        http.get(f"{base_url}/v1/namespace/{ns}/list", params={"limit": limit}), 400, 13
    )
    assert "limit" in body["detail"]


# Names are positions (LanceDB pages by the last name): these are neither a name nor ours.
@pytest.mark.parametrize("token", ["..", "a\\b", "x/y", "namespaces/YQ/000000000000"])
def test_list_bad_page_token_is_400(
    http: requests.Session, base_url: str, ns: str, token: str
) -> None:
    body = assert_error(
        http.get(f"{base_url}/v1/namespace/{ns}/list", params={"page_token": token}), 400, 13
    )
    assert "page_token" in body["detail"]


def test_list_missing_namespace_is_404(http: requests.Session, base_url: str, ns: str) -> None:
    assert_error(http.get(f"{base_url}/v1/namespace/{ns}$nope/list"), 404, 1)


# --------------------------------------------------------------- describe/exists
def test_describe_and_exists(http: requests.Session, base_url: str, ns: str) -> None:
    assert _describe(http, base_url, ns)["properties"] == {}
    assert _exists(http, base_url, ns)
    assert not _exists(http, base_url, f"{ns}$nope")
    resp = http.post(f"{base_url}/v1/namespace/{ns}$nope/describe", json={})
    assert_error(resp, 404, 1)
    # A table is not a namespace.
    _make_table(http, base_url, f"{ns}$t")
    assert not _exists(http, base_url, f"{ns}$t")


# ------------------------------------------------------------------------- drop
def test_drop_empty(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$a", properties={"k": "v"}).status_code == 200
    resp = _drop(http, base_url, f"{ns}$a")
    assert resp.status_code == 200, resp.text
    assert resp.json()["properties"] == {"k": "v"}
    assert not _exists(http, base_url, f"{ns}$a")
    assert _children(http, base_url, ns) == []
    # Created again, it starts afresh.
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {}


@pytest.mark.parametrize("mode", [None, "Fail", "fail", "FAIL"])
def test_drop_missing_with_fail_is_400(
    http: requests.Session, base_url: str, ns: str, mode: str | None
) -> None:
    body = {} if mode is None else {"mode": mode}
    err = assert_error(_drop(http, base_url, f"{ns}$nope", **body), 400)
    assert "nope" in err["detail"]
    assert _exists(http, base_url, ns)


@pytest.mark.parametrize("mode", ["Skip", "skip", "SKIP"])
def test_drop_missing_with_skip_is_204(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    resp = _drop(http, base_url, f"{ns}$nope", mode=mode)
    assert resp.status_code == 204, resp.text
    assert resp.content == b""
    # Also when the parent is missing.
    resp = _drop(http, base_url, f"{ns}$gone$nope", mode=mode)
    assert resp.status_code == 204, resp.text
    assert _children(http, base_url, ns) == []


def test_drop_skip_on_existing_drops(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    resp = _drop(http, base_url, f"{ns}$a", mode="skip")
    assert resp.status_code == 200, resp.text
    assert not _exists(http, base_url, f"{ns}$a")


@pytest.mark.parametrize("behavior", [None, "Restrict", "restrict", "RESTRICT"])
def test_drop_restrict_with_table_keeps_everything(
    http: requests.Session, base_url: str, ns: str, store: StoreView, behavior: str | None
) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    _make_table(http, base_url, f"{ns}$a$t")
    body = {} if behavior is None else {"behavior": behavior}
    err = assert_error(_drop(http, base_url, f"{ns}$a", **body), 409, 3)
    assert "Cascade" in err["detail"]
    assert _exists(http, base_url, f"{ns}$a")
    assert _count(http, base_url, f"{ns}$a$t") == 3
    assert store.exists(table_location(http, base_url, f"{ns}$a$t"))


def test_drop_restrict_with_declared_table_keeps_it(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    resp = http.post(f"{base_url}/v1/table/{ns}$a$t/declare", json={})
    assert resp.status_code == 200, resp.text
    assert_error(_drop(http, base_url, f"{ns}$a"), 409, 3)
    resp = http.post(f"{base_url}/v1/table/{ns}$a$t/exists", json={})
    assert resp.status_code == 200


def test_drop_restrict_with_child_namespace_keeps_everything(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$a", properties={"k": "v"}).status_code == 200
    assert _create(http, base_url, f"{ns}$a$b").status_code == 200
    assert_error(_drop(http, base_url, f"{ns}$a", behavior="restrict"), 409, 3)
    assert _exists(http, base_url, f"{ns}$a$b")
    assert _describe(http, base_url, f"{ns}$a")["properties"] == {"k": "v"}


@pytest.mark.parametrize("behavior", ["Cascade", "cascade", "CASCADE"])
def test_drop_cascade_drops_everything_below(
    http: requests.Session, base_url: str, ns: str, store: StoreView, behavior: str
) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    assert _create(http, base_url, f"{ns}$a$b").status_code == 200
    assert _create(http, base_url, f"{ns}$a$b$c").status_code == 200
    _make_table(http, base_url, f"{ns}$a$t1")
    _make_table(http, base_url, f"{ns}$a$b$t2")
    _make_table(http, base_url, f"{ns}$a$b$c$t3")
    assert http.post(f"{base_url}/v1/table/{ns}$a$b$d/declare", json={}).status_code == 200
    _make_table(http, base_url, f"{ns}$keep")
    locations = [table_location(http, base_url, f"{ns}${t}")
                 for t in ("a$t1", "a$b$t2", "a$b$c$t3")]
    resp = _drop(http, base_url, f"{ns}$a", behavior=behavior)
    assert resp.status_code == 200, resp.text
    for ident in [f"{ns}$a", f"{ns}$a$b", f"{ns}$a$b$c"]:
        assert not _exists(http, base_url, ident)
    for ident in [f"{ns}$a$t1", f"{ns}$a$b$t2", f"{ns}$a$b$c$t3", f"{ns}$a$b$d"]:
        resp = http.post(f"{base_url}/v1/table/{ident}/exists", json={})
        assert resp.status_code == 404, ident
    assert not [location for location in locations if store.exists(location)]
    all_tables = http.get(f"{base_url}/v1/table", params={"limit": 1000}).json()["tables"]
    assert not [t for t in all_tables if t.startswith(f"{ns}$a$")]
    assert f"{ns}$keep" in all_tables
    assert _count(http, base_url, f"{ns}$keep") == 3
    assert _children(http, base_url, ns) == []
    # The names are free again.
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    assert _children(http, base_url, f"{ns}$a") == []


def test_drop_unknown_mode_or_behavior_is_400(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$a").status_code == 200
    _make_table(http, base_url, f"{ns}$a$t")
    err = assert_error(_drop(http, base_url, f"{ns}$a", behavior="Cascades"), 400, 13)
    assert "behavior" in err["detail"]
    err = assert_error(_drop(http, base_url, f"{ns}$a", mode="Ignore", behavior="cascade"), 400,
                       13)
    assert "mode" in err["detail"]
    assert_error(_drop(http, base_url, f"{ns}$a", behavior=True), 400, 13)
    assert _count(http, base_url, f"{ns}$a$t") == 3
