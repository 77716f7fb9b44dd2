"""Versions, restore and transactions over HTTP, with exact rows at every step."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.support import assert_error
from tests.support.versioned import create, delete, expect, insert, ok, post, read


# --------------------------------------------------------------------------- story
def test_story_insert_delete_tag_branch_restore(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$story"
    assert create(http, base_url, t, [1, 2, 3, 4, 5]) == 1
    assert insert(http, base_url, t, [6, 7]) == 2
    assert delete(http, base_url, t, "id = 2") == 3
    assert read(http, base_url, t) == expect([1, 3, 4, 5, 6, 7])

    # Tag the version before the delete, then branch from the tag's version.
    ok(post(http, base_url, t, "tags/create", {"tag": "before-delete", "version": 2}))
    tagged = ok(post(http, base_url, t, "tags/version", {"tag": "before-delete"}))
    assert tagged == {"version": 2, "branch": "main"}
    created = ok(post(http, base_url, t, "branches/create", {
        "name": "fix", "from_branch": tagged["branch"], "from_version": tagged["version"]}))
    assert created["version"] == 2
    assert read(http, base_url, t, branch="fix") == expect([1, 2, 3, 4, 5, 6, 7])

    # Writes on the branch: the branch changes, main does not.
    assert insert(http, base_url, t, [100, 101], branch="fix") == 3
    assert delete(http, base_url, t, "id = 1", branch="fix") == 4
    assert read(http, base_url, t, branch="fix") == expect([2, 3, 4, 5, 6, 7, 100, 101])
    assert read(http, base_url, t) == expect([1, 3, 4, 5, 6, 7])

    # Old versions of main and of the branch.
    assert read(http, base_url, t, version=1) == expect([1, 2, 3, 4, 5])
    assert read(http, base_url, t, version=2) == expect([1, 2, 3, 4, 5, 6, 7])
    assert read(http, base_url, t, version=3, branch="fix") == expect(
        [1, 2, 3, 4, 5, 6, 7, 100, 101])

    # What each version did.
    listed = ok(post(http, base_url, t, "version/list"))
    assert [v["version"] for v in listed["versions"]] == [1, 2, 3]
    assert [v["metadata"]["operation"] for v in listed["versions"]] == [
        "Overwrite", "Append", "Delete"]
    # The server wraps predicates in parentheses so that Lance must parse all of them.
    assert listed["versions"][2]["metadata"]["predicate"] == "(id = 2)"
    assert [v["metadata"]["total_rows"] for v in listed["versions"]] == ["5", "7", "6"]
    on_branch = ok(http.post(f"{base_url}/v1/table/{t}/version/list",
                             params={"branch": "fix", "descending": "true"}))
    assert [v["version"] for v in on_branch["versions"]] == [4, 3, 2]
    assert [v["metadata"]["operation"] for v in on_branch["versions"]] == [
        "Delete", "Append", "Clone"]
    assert all(v["branch"] == "fix" for v in on_branch["versions"])

    # Restore main to version 1: a new version 4 with version 1's rows.
    restored = ok(post(http, base_url, t, "restore", {"version": 1}))
    assert restored["version"] == 4
    assert read(http, base_url, t) == expect([1, 2, 3, 4, 5])
    txn = ok(http.post(f"{base_url}/v1/transaction/{restored['transaction_id']}/describe",
                       json={}))
    assert txn["status"] == "Succeeded"
    assert txn["properties"]["operation"] == "Restore"
    assert txn["properties"]["restore_version"] == "1"
    assert txn["properties"]["version"] == "4"
    latest = ok(post(http, base_url, t, "version/describe", {}))["version"]
    assert latest["version"] == 4
    assert latest["metadata"]["operation"] == "Restore"
    assert latest["metadata"]["restored_version"] == "1"
    # ... the branch and the tag are untouched.
    assert read(http, base_url, t, branch="fix") == expect([2, 3, 4, 5, 6, 7, 100, 101])
    assert ok(post(http, base_url, t, "tags/version", {"tag": "before-delete"}))["version"] == 2

    # Restore the branch to its first version; main keeps its rows.
    restored = ok(post(http, base_url, t, "restore", {"version": 2, "branch": "fix"}))
    assert restored["version"] == 5
    assert read(http, base_url, t, branch="fix") == expect([1, 2, 3, 4, 5, 6, 7])
    assert read(http, base_url, t) == expect([1, 2, 3, 4, 5])
    assert read(http, base_url, t, version=4, branch="fix") == expect(
        [2, 3, 4, 5, 6, 7, 100, 101])


def test_version_list_pagination(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$paged"
    create(http, base_url, t, [1])
    for i in range(2, 6):
        insert(http, base_url, t, [i])
    for descending, order in ((False, [1, 2, 3, 4, 5]), (True, [5, 4, 3, 2, 1])):
        for limit in (1, 2, 10):
            seen: list[int] = []
            token: str | None = None
            while True:
                params: dict[str, Any] = {"limit": limit, "descending": str(descending).lower()}
                if token:
                    params["page_token"] = token
                page = ok(http.post(f"{base_url}/v1/table/{t}/version/list", params=params))
                assert 1 <= len(page["versions"]) <= limit
                seen.extend(v["version"] for v in page["versions"])
                token = page.get("page_token")
                if not token:
                    break
            assert seen == order, (descending, limit)


def test_version_entries(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$entries"
    create(http, base_url, t, [1, 2])
    insert(http, base_url, t, [3])
    entry = ok(post(http, base_url, t, "version/describe", {"version": 1}))["version"]
    assert entry["version"] == 1
    assert entry["branch"] == "main"
    assert entry["metadata"]["operation"] == "Overwrite"
    assert entry["metadata"]["total_rows"] == "2"
    assert entry["manifest_path"].startswith("_versions/")
    assert entry["manifest_size"] > 0
    assert abs(entry["timestamp_millis"] / 1000 - time.time()) < 600
    listed = ok(http.get(f"{base_url}/v1/table/{t}/version/list"))["versions"]
    assert [v["timestamp_millis"] for v in listed] == sorted(v["timestamp_millis"] for v in listed)
    assert listed[0] == entry


def test_restore_to_latest_and_old_version_reads(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$again"
    create(http, base_url, t, [1])
    insert(http, base_url, t, [2])
    restored = ok(post(http, base_url, t, "restore", {"version": 2}))
    assert restored["version"] == 3
    assert read(http, base_url, t) == expect([1, 2])
    assert read(http, base_url, t, version=1) == expect([1])


# -------------------------------------------------------------------------- errors
def test_version_errors(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$errs"
    create(http, base_url, t, [1])
    assert_error(post(http, base_url, t, "version/describe", {"version": 7}), 404, 11)
    assert_error(post(http, base_url, t, "version/describe", {"version": 0}), 404, 11)
    assert_error(post(http, base_url, t, "version/describe", {"version": -1}), 400, 13)
    assert_error(post(http, base_url, t, "version/describe", {"version": "1"}), 400, 13)
    assert_error(post(http, base_url, t, "version/describe", {"branch": "nope"}), 404, 22)
    assert_error(http.post(f"{base_url}/v1/table/{t}/version/list",
                           params={"branch": "nope"}), 404, 22)
    assert_error(http.post(f"{base_url}/v1/table/{t}/version/list",
                           params={"limit": "x"}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{t}/version/list",
                           params={"descending": "maybe"}), 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{t}/version/list",
                           params={"page_token": "!!!"}), 400, 13)
    assert_error(post(http, base_url, f"{ns}$missing", "version/list"), 404, 4)
    assert_error(post(http, base_url, f"{ns}$missing", "version/describe", {}), 404, 4)


def test_restore_errors_change_nothing(http: requests.Session, base_url: str, ns: str) -> None:
    t = f"{ns}$rerr"
    create(http, base_url, t, [1, 2])
    assert_error(post(http, base_url, t, "restore", {"version": 9}), 404, 11)
    assert_error(post(http, base_url, t, "restore", {"version": 0}), 404, 11)
    body = assert_error(post(http, base_url, t, "restore", {"version": -1}), 400, 13)
    assert "version" in body["detail"]
    assert_error(post(http, base_url, t, "restore", {}), 400, 13)
    assert_error(post(http, base_url, t, "restore", {"version": 1.5}), 400, 13)
    assert_error(post(http, base_url, t, "restore", {"version": True}), 400, 13)
    assert_error(post(http, base_url, t, "restore", {"version": 1, "branch": "nope"}), 404, 22)
    assert_error(post(http, base_url, t, "restore", {"version": 1, "branch": 3}), 400, 13)
    assert_error(post(http, base_url, f"{ns}$missing", "restore", {"version": 1}), 404, 4)
    assert_error(post(http, base_url, f"nope{ns}$x", "restore", {"version": 1}), 404, 1)
    # Nothing above made a version.
    listed = ok(post(http, base_url, t, "version/list"))["versions"]
    assert [v["version"] for v in listed] == [1]
    assert read(http, base_url, t) == expect([1, 2])


def test_transaction_errors(http: requests.Session, base_url: str) -> None:
    resp = http.post(f"{base_url}/v1/transaction/0123456789abcdef/describe", json={})
    body = assert_error(resp, 404, 10)
    assert "0123456789abcdef" in body["detail"]


def describe_transaction(http: requests.Session, base_url: str, txn_id: str) -> dict[str, Any]:
    return ok(http.post(f"{base_url}/v1/transaction/{txn_id}/describe", json={}))


def test_failed_index_build_is_a_failed_transaction(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$failing"
    create(http, base_url, t, [1, 2, 3])
    # Valid as a request, so the build starts; Lance then refuses a full-text index on
    # an integer column.
    resp = post(http, base_url, t, "create_index", {"column": "id", "index_type": "FTS"})
    body = assert_error(resp, 400, 13)
    assert "transaction_id" not in body  # the error body stays the contract's
    txn_id = resp.headers["x-transaction-id"]
    txn = describe_transaction(http, base_url, txn_id)
    assert txn["status"] == "Failed"
    props = txn["properties"]
    assert props["operation"] == "CreateTableIndex"
    assert props["table"] == t and props["branch"] == "main"
    assert props["column"] == "id" and props["index_type"] == "INVERTED"
    assert props["error"] == body["detail"]
    assert "must be string" in props["error"] and "int64" in props["error"]
    assert props["error_status"] == "400" and props["error_code"] == "13"
    assert "version" not in props and "index_name" not in props
    # The failure changed nothing.
    assert [v["version"] for v in ok(post(http, base_url, t, "version/list"))["versions"]] == [1]
    assert ok(post(http, base_url, t, "index/list"))["indexes"] == []

    # The same build on a string column succeeds: its own transaction, no header.
    resp = post(http, base_url, t, "create_scalar_index", {"column": "label", "index_type": "FTS"})
    built = ok(resp)
    assert "x-transaction-id" not in resp.headers and built["transaction_id"] != txn_id
    assert describe_transaction(http, base_url, built["transaction_id"])["status"] == "Succeeded"
    assert describe_transaction(http, base_url, txn_id)["status"] == "Failed"

    # A request refused before the operation starts is no transaction.
    for refused, code in (
        (post(http, base_url, t, "create_index", {"column": "nope", "index_type": "BTREE"}),
         12),  # no such column
        (post(http, base_url, t, "create_index", {"column": "id", "index_type": "BTREE",
                                                  "branch": "ghost"}), 22),  # no such branch
        (post(http, base_url, t, "restore", {"version": 9}), 11),  # no such version
    ):
        assert_error(refused, 404, code)
        assert "x-transaction-id" not in refused.headers


def test_unexpected_failure_in_a_transaction_carries_its_id(
    http: requests.Session, base_url: str, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nsframe.server._storage.catalog import Catalog

    t = f"{ns}$buggy"
    create(http, base_url, t, [1, 2, 3])

    def broken(*args: object) -> None:
        raise RuntimeError("a bug after the build, outside lance_errors")

    # Our own failure once Lance has built the index: still a 500, now with the id.
    monkeypatch.setattr(Catalog, "remember", broken)
    resp = post(http, base_url, t, "create_scalar_index", {"column": "id", "index_type": "BTREE"})
    monkeypatch.undo()
    body = assert_error(resp, 500, 18)
    assert "lance_errors" not in body["detail"]
    txn = describe_transaction(http, base_url, resp.headers["x-transaction-id"])
    assert txn["status"] == "Failed"
    props = txn["properties"]
    assert props["operation"] == "CreateTableIndex"
    assert props["error"] == body["detail"]
    assert props["error_status"] == "500" and props["error_code"] == "18"
