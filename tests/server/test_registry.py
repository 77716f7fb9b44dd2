"""Rename, register and deregister over raw HTTP, the catalog states a crash can leave
behind them, and the table version records this server refuses."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from nsframe.server._storage import gc, registry
from nsframe.server._storage.catalog import Catalog
from tests.support import ARROW_HEADERS, assert_error, ipc_stream, table_location


def create(http: requests.Session, base_url: str, ident: str, ids: list[int]) -> None:
    resp = http.post(f"{base_url}/v1/table/{ident}/create", data=ipc_stream({"id": ids}),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text


def post(http: requests.Session, base_url: str, ident: str, action: str,
         body: Any | None = None) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{ident}/{action}", json=body or {})


def count(http: requests.Session, base_url: str, ident: str) -> int:
    resp = post(http, base_url, ident, "count_rows")
    assert resp.status_code == 200, resp.text
    return int(resp.json())


def tables(http: requests.Session, base_url: str, ns: str) -> list[str]:
    names: list[str] = http.get(f"{base_url}/v1/namespace/{ns}/table/list").json()["tables"]
    return names


# ---------------------------------------------------------------------------- rename
def test_rename_moves_the_name_not_the_data(http: requests.Session, base_url: str,
                                            ns: str) -> None:
    create(http, base_url, f"{ns}$a", [1, 2, 3])
    where = Path(table_location(http, base_url, f"{ns}$a"))
    resp = post(http, base_url, f"{ns}$a", "rename", {"new_table_name": "b"})
    assert resp.status_code == 200, resp.text
    assert tables(http, base_url, ns) == ["b"]
    assert count(http, base_url, f"{ns}$b") == 3
    assert Path(table_location(http, base_url, f"{ns}$b")) == where
    assert_error(post(http, base_url, f"{ns}$a", "describe"), 404, 4)
    # Into another namespace, with upstream's member name.
    assert http.post(f"{base_url}/v1/namespace/{ns}$other/create", json={}).ok
    resp = post(http, base_url, f"{ns}$b", "rename",
                {"new_table_name": "c", "new_namespace_id": [ns, "other"]})
    assert resp.status_code == 200, resp.text
    assert count(http, base_url, f"{ns}$other$c") == 3 and tables(http, base_url, ns) == []


def test_rename_refusals(http: requests.Session, base_url: str, ns: str) -> None:
    create(http, base_url, f"{ns}$a", [1])
    create(http, base_url, f"{ns}$b", [1, 2])
    assert_error(post(http, base_url, f"{ns}$a", "rename", {"new_table_name": "b"}), 409, 5)
    assert_error(post(http, base_url, f"{ns}$a", "rename", {}), 400, 13)
    assert_error(post(http, base_url, f"{ns}$a", "rename", {"new_table_name": "x/y"}), 400, 13)
    assert_error(post(http, base_url, f"{ns}$a", "rename",
                      {"new_table_name": "c", "new_namespace_id": ["nowhere"]}), 404, 1)
    assert_error(post(http, base_url, f"{ns}$zz", "rename", {"new_table_name": "c"}), 404, 4)
    assert tables(http, base_url, ns) == ["a", "b"]
    assert (count(http, base_url, f"{ns}$a"), count(http, base_url, f"{ns}$b")) == (1, 2)


@pytest.fixture
def catalog(root: Path) -> Iterator[Catalog]:
    """A second catalog on the session server's root: everything is in storage, so it
    sees and writes what the server does."""
    opened = Catalog(root)
    yield opened
    opened.close()


def test_a_rename_cut_short_shows_the_table_once_and_keeps_its_data(
    catalog: Catalog, http: requests.Session, base_url: str, ns: str
) -> None:
    """A crash after the new name is filed, before the old one is retired: the next
    listing shows only the new name, a lookup of the old name finishes the rename, and a
    drop of the old name never deletes the data the new name reads."""
    create(http, base_url, f"{ns}$a", [1, 2])
    ref = catalog.require_table([ns, "a"])
    _, old_folder = catalog.table_folder(ref.id)
    _, new_folder = catalog.table_folder([ns, "b"])
    keep = {"properties": {}}
    marked = catalog.entries.advance(old_folder, ref.entry, "created", ref.entry.uid,
                                     {**keep, "renaming_to": new_folder})
    assert marked is not None
    assert catalog.entries.advance(new_folder, None, "created", ref.entry.uid,
                                   {**keep, "renamed_from": old_folder}) is not None
    # The crash is here: both entries are live in storage.
    assert tables(http, base_url, ns) == ["b"]
    assert count(http, base_url, f"{ns}$b") == 2
    assert_error(post(http, base_url, f"{ns}$a", "describe"), 404, 4)
    assert count(http, base_url, f"{ns}$b") == 2


def test_dropping_either_name_mid_rename_keeps_the_data(catalog: Catalog,
                                                        http: requests.Session,
                                                        base_url: str, ns: str) -> None:
    create(http, base_url, f"{ns}$a", [1, 2])
    ref = catalog.require_table([ns, "a"])
    _, old_folder = catalog.table_folder(ref.id)
    _, new_folder = catalog.table_folder([ns, "b"])
    marked = catalog.entries.advance(old_folder, ref.entry, "created", ref.entry.uid,
                                     {"properties": {}, "renaming_to": new_folder})
    filed = catalog.entries.advance(new_folder, None, "created", ref.entry.uid,
                                    {"properties": {}, "renamed_from": old_folder})
    assert marked is not None and filed is not None
    catalog.drop_table(catalog._ref(ref.id, marked))  # the old name, before any lookup
    assert count(http, base_url, f"{ns}$b") == 2


# ------------------------------------------------------------- register / deregister
def test_deregister_keeps_the_data_and_register_files_it_again(
    catalog: Catalog, http: requests.Session, base_url: str, ns: str, root: Path
) -> None:
    create(http, base_url, f"{ns}$a", [1, 2, 3])
    where = Path(table_location(http, base_url, f"{ns}$a"))
    resp = post(http, base_url, f"{ns}$a", "deregister")
    assert resp.status_code == 200, resp.text
    assert resp.json()["location"] == str(where)
    assert tables(http, base_url, ns) == []
    assert (where / "_versions").is_dir()
    # No garbage collection takes a deregistered table's folder.
    found = gc.collect(catalog, dry_run=True, grace_seconds=0)
    assert not [f for f in found.folders if where.name in f]
    relative = os.path.relpath(where, root)
    resp = post(http, base_url, f"{ns}$again", "register", {"location": relative,
                                                             "properties": {"k": "v"}})
    assert resp.status_code == 200, resp.text
    # The location as sent (Lance's REST suite compares them); describe has the full one.
    assert resp.json() == {"location": relative, "properties": {"k": "v"}}
    assert table_location(http, base_url, f"{ns}$again") == str(where)
    assert count(http, base_url, f"{ns}$again") == 3
    # An absolute path inside the root names the same folder: already registered.
    assert_error(post(http, base_url, f"{ns}$twice", "register", {"location": str(where)}),
                 409, 5)
    # Overwrite replaces a registration and keeps the replaced table's data.
    create(http, base_url, f"{ns}$other", [7])
    other = Path(table_location(http, base_url, f"{ns}$other"))
    post(http, base_url, f"{ns}$again", "deregister")
    resp = post(http, base_url, f"{ns}$other", "register",
                {"location": relative, "mode": "overwrite"})
    assert resp.status_code == 200, resp.text
    assert count(http, base_url, f"{ns}$other") == 3 and (other / "_versions").is_dir()
    assert registry.kept_keys(catalog) >= {os.path.relpath(other, root)}


def test_register_refusals(http: requests.Session, base_url: str, ns: str, root: Path,
                           tmp_path: Path) -> None:
    create(http, base_url, f"{ns}$a", [1])
    for location, status, code in [
        ("", 400, 13),
        (str(tmp_path), 400, 13),             # outside the root
        ("../elsewhere.lance", 400, 13),
        ("_catalog", 400, 13),
        ("tables/no-such.lance", 400, 13),    # not a dataset
        ("tables/ \U000f765f", 400, 13),       # a segment no store can hold (found by fuzzing)
        ("tables/a\x01b.lance", 400, 13),
    ]:
        resp = post(http, base_url, f"{ns}$r", "register", {"location": location})
        assert_error(resp, status, code)
    relative = os.path.relpath(table_location(http, base_url, f"{ns}$a"), root)
    assert_error(post(http, base_url, f"{ns}$a", "register", {"location": relative}), 409, 5)
    assert_error(post(http, base_url, f"{ns}$missing", "deregister"), 404, 4)
    assert tables(http, base_url, ns) == ["a"]


@pytest.mark.parametrize("action", ["version/create", "version/delete"])
def test_table_version_records_are_unsupported(http: requests.Session, base_url: str,
                                               ns: str, action: str) -> None:
    create(http, base_url, f"{ns}$a", [1])
    body = assert_error(post(http, base_url, f"{ns}$a", action,
                             {"version": 9, "manifest_path": "x", "ranges": []}), 404, 0)
    assert "Lance commits" in body["detail"]
