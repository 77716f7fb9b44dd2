"""Tags over HTTP: create, list (GET and POST, paginated), update, delete, version lookup."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.support import assert_error
from tests.support.paging import walk_pages
from tests.support.versioned import create, expect, insert, ok, post, read


def collect_tags(http: requests.Session, base_url: str, table: str, limit: int,
                 method: str) -> tuple[dict[str, Any], int]:
    """Every tag, page by page; also returns the number of pages."""
    return walk_pages(http, method, f"{base_url}/v1/table/{table}/tags/list", "tags", limit)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_tag_list_pagination(http: requests.Session, base_url: str, ns: str,
                             method: str) -> None:
    t = f"{ns}$tags"
    create(http, base_url, t, [1])
    insert(http, base_url, t, [2])
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    for i, name in enumerate(names):
        ok(post(http, base_url, t, "tags/create", {"tag": name, "version": 1 + i % 2}))
    for limit, pages in ((1, 5), (2, 3), (5, 1), (50, 1)):
        found, n_pages = collect_tags(http, base_url, t, limit, method)
        assert sorted(found) == sorted(names)
        assert n_pages == pages, limit
        assert {name: found[name]["version"] for name in names} == {
            "alpha": 1, "beta": 2, "gamma": 1, "delta": 2, "epsilon": 1}
    whole = ok(http.request(method, f"{base_url}/v1/table/{t}/tags/list"))
    assert sorted(whole["tags"]) == sorted(names)
    assert not whole.get("page_token")
    # The limit may also travel in a POST body, as the upstream request schema has it.
    if method == "POST":
        first = ok(post(http, base_url, t, "tags/list", {"limit": 2}))
        assert list(first["tags"]) == ["alpha", "beta"] and first["page_token"]
        second = ok(post(http, base_url, t, "tags/list",
                         {"limit": 2, "page_token": first["page_token"]}))
        assert list(second["tags"]) == ["delta", "epsilon"]


def test_tag_lifecycle_and_entries(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$life"
    create(http, base_url, t, [1, 2])
    insert(http, base_url, t, [3])
    created = ok(post(http, base_url, t, "tags/create", {"tag": "v1.0", "version": 1}))
    assert created["version"] == 1
    entry = ok(post(http, base_url, t, "tags/list"))["tags"]["v1.0"]
    assert entry["version"] == 1
    assert entry["manifestSize"] > 0
    assert "branch" not in entry  # upstream: absent for the main branch
    assert entry["createdAt"] > 1_600_000_000
    assert entry["metadata"] == {}
    assert ok(post(http, base_url, t, "tags/version", {"tag": "v1.0"})) == {
        "version": 1, "branch": "main"}
    assert read(http, base_url, t, version=1) == expect([1, 2])

    ok(post(http, base_url, t, "tags/update", {"tag": "v1.0", "version": 2}))
    assert ok(post(http, base_url, t, "tags/version", {"tag": "v1.0"})) == {
        "version": 2, "branch": "main"}

    # A tag on a branch version reports that branch.
    ok(post(http, base_url, t, "branches/create", {"name": "dev"}))
    insert(http, base_url, t, [9], branch="dev")
    ok(post(http, base_url, t, "tags/create", {"tag": "dev-tip", "version": 3, "branch": "dev"}))
    assert ok(post(http, base_url, t, "tags/version", {"tag": "dev-tip"})) == {
        "version": 3, "branch": "dev"}
    assert ok(post(http, base_url, t, "tags/list"))["tags"]["dev-tip"]["branch"] == "dev"
    # Moving a tag across branches.
    ok(post(http, base_url, t, "tags/update", {"tag": "dev-tip", "version": 1, "branch": "main"}))
    assert ok(post(http, base_url, t, "tags/version", {"tag": "dev-tip"})) == {
        "version": 1, "branch": "main"}

    assert ok(post(http, base_url, t, "tags/delete", {"tag": "v1.0"})) == {}
    assert_error(post(http, base_url, t, "tags/version", {"tag": "v1.0"}), 404, 8)
    assert list(ok(post(http, base_url, t, "tags/list"))["tags"]) == ["dev-tip"]
    # The tag's name is free again.
    ok(post(http, base_url, t, "tags/create", {"tag": "v1.0", "version": 1}))


def test_tag_errors(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$terr"
    create(http, base_url, t, [1])
    ok(post(http, base_url, t, "tags/create", {"tag": "keep", "version": 1}))

    body = assert_error(post(http, base_url, t, "tags/create", {"tag": "keep", "version": 1}),
                        409, 9)
    assert "keep" in body["detail"]
    assert_error(post(http, base_url, t, "tags/create", {"tag": "x", "version": 5}), 404, 11)
    assert_error(post(http, base_url, t, "tags/create", {"tag": "x", "version": 0}), 404, 11)
    assert_error(post(http, base_url, t, "tags/create",
                      {"tag": "x", "version": 1, "branch": "nope"}), 404, 22)
    assert_error(post(http, base_url, t, "tags/create", {"tag": "x", "version": -1}), 400, 13)
    assert_error(post(http, base_url, t, "tags/create", {"tag": "x"}), 400, 13)
    assert_error(post(http, base_url, t, "tags/create", {"version": 1}), 400, 13)
    for bad in ("", "a/b", "with space", "héllo", ".hidden", "x.lock", "a" * 201):
        assert_error(post(http, base_url, t, "tags/create", {"tag": bad, "version": 1}), 400, 13)
    assert_error(post(http, base_url, t, "tags/create", {"tag": 5, "version": 1}), 400, 13)

    assert_error(post(http, base_url, t, "tags/update", {"tag": "nope", "version": 1}), 404, 8)
    assert_error(post(http, base_url, t, "tags/update", {"tag": "keep", "version": 4}), 404, 11)
    assert_error(post(http, base_url, t, "tags/update",
                      {"tag": "keep", "version": 1, "branch": "nope"}), 404, 22)
    assert_error(post(http, base_url, t, "tags/delete", {"tag": "nope"}), 404, 8)
    assert_error(post(http, base_url, t, "tags/delete", {}), 400, 13)
    assert_error(post(http, base_url, t, "tags/version", {"tag": "nope"}), 404, 8)
    assert_error(post(http, base_url, t, "tags/version", {}), 400, 13)
    assert_error(http.get(f"{base_url}/v1/table/{t}/tags/list", params={"limit": -1}), 400, 13)
    assert_error(http.get(f"{base_url}/v1/table/{t}/tags/list",
                          params={"page_token": "%%%"}), 400, 13)
    assert_error(post(http, base_url, f"{ns}$missing", "tags/list"), 404, 4)
    assert_error(post(http, base_url, f"{ns}$missing", "tags/version", {"tag": "keep"}), 404, 4)

    # None of the failures changed the one tag.
    tags = ok(post(http, base_url, t, "tags/list"))["tags"]
    assert list(tags) == ["keep"] and tags["keep"]["version"] == 1
