"""Branches over HTTP: create from main or another branch, list with pagination, delete,
and isolation of writes between branches."""

from __future__ import annotations

from typing import Any

import requests

from tests.support import assert_error
from tests.support.paging import walk_pages
from tests.support.versioned import count, create, delete, expect, insert, ok, post, read, rows


def collect_branches(http: requests.Session, base_url: str, table: str,
                     limit: int) -> tuple[dict[str, Any], int]:
    return walk_pages(http, "POST", f"{base_url}/v1/table/{table}/branches/list",
                      "branches", limit)


def test_branch_list_pagination(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$pages"
    create(http, base_url, t, [1])
    names = ["b-one", "b-two", "b-three", "nested/four", "b-five"]
    for name in names:
        ok(post(http, base_url, t, "branches/create", {"name": name}))
    for limit, pages in ((1, 5), (2, 3), (4, 2), (5, 1), (100, 1)):
        found, n_pages = collect_branches(http, base_url, t, limit)
        assert sorted(found) == sorted(names)  # "main" is implicit, never listed
        assert n_pages == pages, limit
    whole = ok(http.post(f"{base_url}/v1/table/{t}/branches/list"))
    assert sorted(whole["branches"]) == sorted(names)
    assert whole.get("page_token") in (None, "")
    # An empty page_token is the same as none.
    again = ok(http.post(f"{base_url}/v1/table/{t}/branches/list", params={"page_token": ""}))
    assert again == whole


def test_empty_branch_list(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$none"
    create(http, base_url, t, [1])
    listed = ok(http.post(f"{base_url}/v1/table/{t}/branches/list", params={"limit": 1}))
    assert listed["branches"] == {} and not listed.get("page_token")


def test_branch_entries_and_lineage(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$lineage"
    create(http, base_url, t, [1])
    insert(http, base_url, t, [2])
    insert(http, base_url, t, [3])
    ok(post(http, base_url, t, "branches/create", {"name": "a", "from_version": 2}))
    insert(http, base_url, t, [4], branch="a")  # a: version 3
    insert(http, base_url, t, [5], branch="a")  # a: version 4
    ok(post(http, base_url, t, "branches/create",
            {"name": "b", "from_branch": "a", "from_version": 3}))
    ok(post(http, base_url, t, "branches/create", {"name": "c", "from_branch": "a"}))
    branches = ok(http.post(f"{base_url}/v1/table/{t}/branches/list"))["branches"]
    assert set(branches) == {"a", "b", "c"}
    assert "parentBranch" not in branches["a"]
    assert branches["a"]["parentVersion"] == 2
    assert branches["b"]["parentBranch"] == "a" and branches["b"]["parentVersion"] == 3
    assert branches["c"]["parentBranch"] == "a" and branches["c"]["parentVersion"] == 4
    for entry in branches.values():
        assert entry["createAt"] > 1_600_000_000  # seconds, not milliseconds
        assert entry["createAt"] < 10_000_000_000
        assert entry["manifestSize"] > 0
        assert entry["metadata"] == {}
    assert read(http, base_url, t, branch="b") == expect([1, 2, 4])
    assert read(http, base_url, t, branch="c") == expect([1, 2, 4, 5])
    assert read(http, base_url, t, branch="a", version=3) == expect([1, 2, 4])
    assert read(http, base_url, t) == expect([1, 2, 3])


def test_writes_stay_on_their_branch(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$isolated"
    create(http, base_url, t, [1, 2, 3])
    ok(post(http, base_url, t, "branches/create", {"name": "x"}))
    ok(post(http, base_url, t, "branches/create", {"name": "y"}))
    assert insert(http, base_url, t, [4], branch="x") == 2
    assert delete(http, base_url, t, "id = 1", branch="y") == 2
    assert insert(http, base_url, t, [5]) == 2
    resp = http.post(f"{base_url}/v1/table/{t}/insert", data=rows([9]),
                     params={"branch": "x", "mode": "overwrite"},
                     headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    assert ok(resp)["version"] == 3
    assert read(http, base_url, t) == expect([1, 2, 3, 5])
    assert read(http, base_url, t, branch="x") == expect([9])
    assert read(http, base_url, t, branch="y") == expect([2, 3])
    assert read(http, base_url, t, branch="main") == expect([1, 2, 3, 5])
    versions = ok(http.post(f"{base_url}/v1/table/{t}/version/list"))["versions"]
    assert [v["version"] for v in versions] == [1, 2]


def test_delete_and_recreate_branch(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$recreate"
    create(http, base_url, t, [1])
    ok(post(http, base_url, t, "branches/create", {"name": "tmp"}))
    insert(http, base_url, t, [2], branch="tmp")
    assert read(http, base_url, t, branch="tmp") == expect([1, 2])
    assert ok(post(http, base_url, t, "branches/delete", {"name": "tmp"})) == {}
    assert_error(post(http, base_url, t, "count_rows", {"branch": "tmp"}), 404, 22)
    assert ok(http.post(f"{base_url}/v1/table/{t}/branches/list"))["branches"] == {}
    # The same name again starts from main, not from the deleted branch's rows.
    insert(http, base_url, t, [3])
    ok(post(http, base_url, t, "branches/create", {"name": "tmp"}))
    assert read(http, base_url, t, branch="tmp") == expect([1, 3])


def test_branch_errors(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$berr"
    create(http, base_url, t, [1])
    ok(post(http, base_url, t, "branches/create", {"name": "dev"}))

    body = assert_error(post(http, base_url, t, "branches/create", {"name": "dev"}), 409, 23)
    assert "dev" in body["detail"]
    assert_error(post(http, base_url, t, "branches/create", {"name": "main"}), 409, 23)
    assert_error(post(http, base_url, t, "branches/create",
                      {"name": "n", "from_branch": "nope"}), 404, 22)
    assert_error(post(http, base_url, t, "branches/create",
                      {"name": "n", "from_version": 9}), 404, 11)
    assert_error(post(http, base_url, t, "branches/create",
                      {"name": "n", "from_branch": "dev", "from_version": 9}), 404, 11)
    assert_error(post(http, base_url, t, "branches/create",
                      {"name": "n", "from_version": -1}), 400, 13)
    assert_error(post(http, base_url, t, "branches/create", {}), 400, 13)
    for bad in ("", "../up", "a..b", "with space", "x.lock", "b" * 201):
        assert_error(post(http, base_url, t, "branches/create", {"name": bad}), 400, 13)

    assert_error(post(http, base_url, t, "branches/delete", {"name": "nope"}), 404, 22)
    assert_error(post(http, base_url, t, "branches/delete", {"name": "main"}), 400, 13)
    assert_error(post(http, base_url, t, "branches/delete", {}), 400, 13)
    # A branch other branches or tags grew from cannot go.
    ok(post(http, base_url, t, "branches/create", {"name": "child", "from_branch": "dev"}))
    assert_error(post(http, base_url, t, "branches/delete", {"name": "dev"}), 409, 19)
    ok(post(http, base_url, t, "branches/delete", {"name": "child"}))
    ok(post(http, base_url, t, "tags/create", {"tag": "pin", "version": 1, "branch": "dev"}))
    assert_error(post(http, base_url, t, "branches/delete", {"name": "dev"}), 409, 19)
    ok(post(http, base_url, t, "tags/delete", {"tag": "pin"}))
    ok(post(http, base_url, t, "branches/delete", {"name": "dev"}))

    assert_error(http.post(f"{base_url}/v1/table/{t}/branches/list",
                           params={"limit": "many"}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{t}/branches/list",
                           params={"page_token": "*"}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$missing/branches/list"), 404, 4)

    # Targeting a missing branch: 404 code 22 everywhere, and nothing is written.
    resp = http.post(f"{base_url}/v1/table/{t}/insert", data=rows([7]),
                     params={"branch": "ghost"},
                     headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    assert_error(resp, 404, 22)
    assert_error(post(http, base_url, t, "delete", {"predicate": "true", "branch": "ghost"}),
                 404, 22)
    assert_error(post(http, base_url, t, "restore", {"version": 1, "branch": "ghost"}), 404, 22)
    assert_error(post(http, base_url, t, "count_rows", {"branch": "ghost"}), 404, 22)
    assert_error(http.get(f"{base_url}/v1/table/{t}/count_rows", params={"branch": "ghost"}),
                 404, 22)
    assert_error(post(http, base_url, t, "describe", {"branch": "ghost"}), 404, 22)
    assert count(http, base_url, t) == 1
    assert ok(http.post(f"{base_url}/v1/table/{t}/branches/list"))["branches"] == {}


def test_create_index_on_a_missing_branch_is_404(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$idxb"
    create(http, base_url, t, [1, 2, 3])
    ok(post(http, base_url, t, "branches/create", {"name": "dev"}))
    btree = {"column": "id", "index_type": "BTREE"}
    for action in ("create_index", "create_scalar_index"):
        in_query = http.post(f"{base_url}/v1/table/{t}/{action}", params={"branch": "ghost"},
                             json=btree)
        assert "ghost" in assert_error(in_query, 404, 22)["detail"]
        assert_error(post(http, base_url, t, action, {**btree, "branch": "ghost"}), 404, 22)
        assert "x-transaction-id" not in in_query.headers
    # Nothing was built, on main or on the existing branch; no branch appeared.
    for branch in ("main", "dev"):
        listed = http.post(f"{base_url}/v1/table/{t}/index/list", params={"branch": branch})
        assert ok(listed)["indexes"] == []
    assert sorted(ok(http.post(f"{base_url}/v1/table/{t}/branches/list"))["branches"]) == ["dev"]
    versions = ok(http.post(f"{base_url}/v1/table/{t}/version/list"))["versions"]
    assert [v["version"] for v in versions] == [1]
    # The same build on the existing branch works, and stays on it.
    built = ok(http.post(f"{base_url}/v1/table/{t}/create_index", params={"branch": "dev"},
                         json=btree))
    assert built["version"] == 2
    on_dev = ok(http.post(f"{base_url}/v1/table/{t}/index/list", params={"branch": "dev"}))
    assert [i["columns"] for i in on_dev["indexes"]] == [["id"]]
    assert ok(post(http, base_url, t, "index/list"))["indexes"] == []
    assert read(http, base_url, t, branch="dev") == expect([1, 2, 3])
