"""Ownership of storage: no two catalog entries own overlapping folders.

A registered location is not inside, and does not contain, another table's folder, a
branch tree of one, or a database root; symlinks are resolved before the check; drop
deletes only the folder its entry owns and deregister deletes nothing (docs/storage.md,
Ownership). Runs on a local root and, where no local file system is needed, on s3
(``pytest --root-kind s3``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import requests

from nsframe.server import serve_in_thread
from nsframe.server._config import ServerConfig
from nsframe.server._storage.catalog import Catalog
from tests.support import assert_error, table_location
from tests.support.stores import StoreView
from tests.support.versioned import count, create, expect, insert, ok, post, read


def relative(store: StoreView, location: str) -> str:
    """``location`` (describe's) relative to the root."""
    if store.is_local:
        return os.path.relpath(location, store.root)
    assert location.startswith(store.root + "/"), location
    return location[len(store.root) + 1:]


def write_dataset(store: StoreView, key: str, ids: list[int]) -> str:
    """A Lance dataset written straight into the root at ``key``, as pylance would."""
    uri = f"{store.root}/{key}"
    data = pa.table({"id": pa.array(ids, pa.int64()),
                     "label": pa.array([f"r{i}" for i in ids], pa.string())})
    lance.write_dataset(data, uri, storage_options=store.lance_options())
    return uri


def tables(http: requests.Session, base_url: str, ns: str) -> list[str]:
    names: list[str] = http.get(f"{base_url}/v1/namespace/{ns}/table/list").json()["tables"]
    return names


def refused(resp: requests.Response, secret: str | None = None) -> dict[str, object]:
    """A register refused as bad input or as a conflict, naming no other table."""
    assert resp.status_code in (400, 409), resp.text
    body = assert_error(resp, resp.status_code, 13 if resp.status_code == 400 else 5)
    if secret is not None:
        assert secret not in str(body["detail"]), body
    return body


def branch_table(http: requests.Session, base_url: str, ident: str) -> str:
    """Table ``ident`` with rows 1-3 on main and 1-4 on branch ``br``; its location."""
    create(http, base_url, ident, [1, 2, 3])
    ok(post(http, base_url, ident, "branches/create", {"name": "br"}))
    insert(http, base_url, ident, [4], branch="br")
    return table_location(http, base_url, ident)


# ----------------------------------------------------------- another table's folders
def test_register_refuses_the_branch_folder_of_another_table(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    where = branch_table(http, base_url, f"{ns}$secret")
    for location in (f"{where}/tree/br", f"{relative(store, where)}/tree/br"):
        refused(post(http, base_url, f"{ns}$stolen", "register", {"location": location}),
                secret="secret")
    # Nothing was filed, so a drop finds nothing and the branch is whole.
    assert_error(post(http, base_url, f"{ns}$stolen", "drop"), 404, 4)
    assert tables(http, base_url, ns) == ["secret"]
    assert read(http, base_url, f"{ns}$secret", branch="br") == expect([1, 2, 3, 4])
    assert sorted(ok(post(http, base_url, f"{ns}$secret", "branches/list"))["branches"]) \
        == ["br"]


@pytest.mark.parametrize("spelling", [
    "{rel}/tree/br/",           # trailing slash
    "{rel}//tree/br",           # empty segment
    "{rel}/./tree/br",          # dot segment
    "x/../{rel}/tree/br",       # dot-dot back into the root
    "{rel}/tree/br/_versions/..",
    "{rel}/data/..//tree/./br",
])
def test_no_spelling_of_a_branch_folder_is_registered(
        http: requests.Session, base_url: str, ns: str, store: StoreView,
        spelling: str) -> None:
    where = branch_table(http, base_url, f"{ns}$secret")
    location = spelling.format(rel=relative(store, where))
    refused(post(http, base_url, f"{ns}$stolen", "register", {"location": location}),
            secret="secret")
    assert tables(http, base_url, ns) == ["secret"]
    assert count(http, base_url, f"{ns}$secret", branch="br") == 4


def test_percent_encoded_locations_name_no_other_folder(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    """``%2F`` is a slash to an object store's URI parser: a location spelled with it
    must not reach the branch folder by a way round the checks."""
    where = branch_table(http, base_url, f"{ns}$secret")
    rel = relative(store, where)
    for location in (f"{rel}%2Ftree%2Fbr", f"{rel}/tree/%62r", f"{where}%2Ftree%2Fbr",
                     f"file://{where}%2Ftree%2Fbr"):
        refused(post(http, base_url, f"{ns}$stolen", "register", {"location": location}),
                secret="secret")
    assert tables(http, base_url, ns) == ["secret"]


def test_register_refuses_the_folder_of_the_server_s_tables(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    where = branch_table(http, base_url, f"{ns}$secret")
    rel = relative(store, where)
    # The table's own folder is taken; its parent and the root are the server's own.
    assert_error(post(http, base_url, f"{ns}$x", "register", {"location": rel}), 409, 5)
    for location in ("tables", "tables/", ".", store.root, f"{rel}/.."):
        refused(post(http, base_url, f"{ns}$x", "register", {"location": location}))
    # A folder of a data folder, even of one no table names (yet), is part of it.
    write_dataset(store, f"{rel}/data/inner.lance", [9])
    refused(post(http, base_url, f"{ns}$x", "register",
                 {"location": f"{rel}/data/inner.lance"}), secret="secret")
    assert tables(http, base_url, ns) == ["secret"]


def test_registered_folders_do_not_overlap(http: requests.Session, base_url: str, ns: str,
                                           store: StoreView) -> None:
    """Outside tables/, a registered folder may hold another dataset (a branch, a copy):
    whichever of the two is registered first owns it, the other is refused."""
    outer = f"ext-{uuid.uuid4().hex[:8]}/outer.lance"
    write_dataset(store, outer, [1, 2])
    write_dataset(store, f"{outer}/nested.lance", [3])
    ok(post(http, base_url, f"{ns}$outer", "register", {"location": outer}))
    body = refused(post(http, base_url, f"{ns}$inner", "register",
                        {"location": f"{outer}/nested.lance"}), secret="outer")
    assert body["status"] == 409
    # A deregistered folder is kept whole, for a register of that folder again.
    ok(post(http, base_url, f"{ns}$outer", "deregister"))
    body = refused(post(http, base_url, f"{ns}$inner", "register",
                        {"location": f"{outer}/nested.lance"}))
    assert body["status"] == 409 and "deregistered" in str(body["detail"])
    # The other way round: the inner one first, then the folder that holds it.
    other = f"ext-{uuid.uuid4().hex[:8]}/outer.lance"
    write_dataset(store, other, [1, 2])
    write_dataset(store, f"{other}/nested.lance", [3])
    ok(post(http, base_url, f"{ns}$inner", "register", {"location": f"{other}/nested.lance"}))
    body = refused(post(http, base_url, f"{ns}$outer", "register", {"location": other}),
                   secret="inner")
    assert body["status"] == 409
    assert tables(http, base_url, ns) == ["inner"]
    assert count(http, base_url, f"{ns}$inner") == 1
    ok(post(http, base_url, f"{ns}$outer", "register", {"location": outer}))
    assert count(http, base_url, f"{ns}$outer") == 2


def test_register_refuses_a_folder_of_another_database_root(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    """A root another server uses (its ``_catalog/`` or ``_nsframe/`` shows it) lies
    inside this one: its tables are that database's, not this one's to file."""
    inner = f"inner-{uuid.uuid4().hex[:8]}"
    other = Catalog(f"{store.root}/{inner}", storage_options=store.options)
    try:
        write_dataset(store, f"{inner}/tables/t.lance", [1, 2])
        for location in (f"{inner}/tables/t.lance", inner):
            refused(post(http, base_url, f"{ns}$x", "register", {"location": location}))
    finally:
        other.close()
    assert tables(http, base_url, ns) == []


# ------------------------------------------------------------------------- symlinks
def test_a_symlink_out_of_the_root_is_refused(http: requests.Session, base_url: str,
                                              ns: str, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.lance"
    write_dataset(StoreView(str(tmp_path)), "outside.lance", [1, 2, 3])
    link = root / f"link-{uuid.uuid4().hex[:8]}"
    link.symlink_to(outside, target_is_directory=True)
    for location in (link.name, str(link)):
        refused(post(http, base_url, f"{ns}$x", "register", {"location": location}))
    # A dataset whose folders are links out of the root is refused too.
    inside = root / f"holder-{uuid.uuid4().hex[:8]}.lance"
    inside.mkdir()
    (inside / "_versions").symlink_to(outside / "_versions", target_is_directory=True)
    (inside / "data").symlink_to(outside / "data", target_is_directory=True)
    refused(post(http, base_url, f"{ns}$x", "register", {"location": inside.name}))
    assert tables(http, base_url, ns) == []
    assert (outside / "_versions").is_dir()


def test_a_symlink_to_another_table_s_folder_is_refused(
        http: requests.Session, base_url: str, ns: str, root: Path) -> None:
    where = Path(branch_table(http, base_url, f"{ns}$secret"))
    to_table = root / f"link-{uuid.uuid4().hex[:8]}"
    to_table.symlink_to(where, target_is_directory=True)
    to_branch = root / f"link-{uuid.uuid4().hex[:8]}"
    to_branch.symlink_to(where / "tree" / "br", target_is_directory=True)
    for link in (to_table, to_branch):
        refused(post(http, base_url, f"{ns}$stolen", "register", {"location": link.name}),
                secret="secret")
    assert_error(post(http, base_url, f"{ns}$stolen", "drop"), 404, 4)
    assert read(http, base_url, f"{ns}$secret", branch="br") == expect([1, 2, 3, 4])


def test_a_case_insensitive_root_compares_names_as_stored(tmp_path: Path) -> None:
    """Where ``_NSFRAME`` opens ``_nsframe`` (macOS, Windows), ``TABLES/X.lance`` is
    the folder ``tables/x.lance``; the key the checks compare is spelled as stored.
    Linux file systems are case-sensitive, so the second folder stands in for the
    case-insensitive lookup here."""
    from nsframe.server._storage.ownership import stored_case

    for folder in ("_nsframe", "tables/x.lance/tree/br"):
        (tmp_path / folder).mkdir(parents=True)
    assert stored_case(str(tmp_path), "TABLES/X.lance/Tree/br") == "TABLES/X.lance/Tree/br"
    (tmp_path / "_NSFRAME").mkdir()
    assert stored_case(str(tmp_path), "TABLES/X.lance/Tree/br") == "tables/x.lance/tree/br"
    assert stored_case(str(tmp_path), "tables/y.lance") == "tables/y.lance"


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize("location", ["a" * 6000, "a/" * 3000, "tables/" + "x" * 5993])
def test_a_very_long_location_is_a_400(http: requests.Session, base_url: str, ns: str,
                                       location: str) -> None:
    body = assert_error(post(http, base_url, f"{ns}$x", "register", {"location": location}),
                        400, 13)
    assert "long" in str(body["detail"])


# ------------------------------------------------------------- drop and deregister
def test_drop_deletes_only_the_registered_folder(http: requests.Session, base_url: str,
                                                 ns: str, store: StoreView) -> None:
    top = f"ext-{uuid.uuid4().hex[:8]}"
    mine = write_dataset(store, f"{top}/mine.lance", [1, 2])
    sibling = write_dataset(store, f"{top}/mine.lance2", [3])  # a name that shares a prefix
    ok(post(http, base_url, f"{ns}$mine", "register", {"location": f"{top}/mine.lance"}))
    ok(post(http, base_url, f"{ns}$sib", "register", {"location": f"{top}/mine.lance2"}))
    # Deregister deletes nothing.
    ok(post(http, base_url, f"{ns}$mine", "deregister"))
    assert store.exists(mine) and store.exists(sibling)
    ok(post(http, base_url, f"{ns}$mine", "register", {"location": f"{top}/mine.lance"}))
    # Drop deletes the folder its entry owns, and nothing next to it.
    assert post(http, base_url, f"{ns}$mine", "drop").status_code in (200, 204)
    assert not store.exists(mine)
    assert store.exists(sibling)
    assert count(http, base_url, f"{ns}$sib") == 1


def test_a_drop_keeps_data_another_table_owns_in_an_old_root(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    """A root registered into before ownership was checked may hold a table whose folder
    is another table's branch: dropping it keeps that data (the catalog entry goes)."""
    where = branch_table(http, base_url, f"{ns}$secret")
    ok(http.post(f"{base_url}/v1/namespace/{ns}$old/create", json={}))
    catalog = Catalog(store.root, storage_options=store.options)
    try:
        for ident in ([ns, "stolen"], [ns, "old", "stolen"]):
            _, folder = catalog.table_folder(ident)
            filed = catalog.entries.advance(folder, None, "created",
                                            catalog.new_table_uid("s"),
                                            {"properties": {},
                                             "key": f"{relative(store, where)}/tree/br"})
            assert filed is not None
    finally:
        catalog.close()
    assert post(http, base_url, f"{ns}$stolen", "drop").status_code in (200, 204)
    resp = http.post(f"{base_url}/v1/namespace/{ns}$old/drop", json={"behavior": "Cascade"})
    assert resp.status_code in (200, 204), resp.text
    assert tables(http, base_url, ns) == ["secret"]
    assert read(http, base_url, f"{ns}$secret", branch="br") == expect([1, 2, 3, 4])


# ----------------------------------------------------------------- database roots
def test_nested_database_roots_are_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inside") as caught, \
            serve_in_thread(tmp_path / "main", databases={"sales": tmp_path / "main" / "s"}):
        pass
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="same"), \
            serve_in_thread(tmp_path / "a", databases={"b": tmp_path / "a" / "x" / ".."}):
        pass
    # A root reached through a symlink is the folder it names.
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(ValueError, match="inside"), \
            serve_in_thread(tmp_path / "real", databases={"b": tmp_path / "alias" / "sub"}):
        pass
    # Siblings, and names that only share a prefix, are separate databases.
    with serve_in_thread(tmp_path / "data", databases={"x": tmp_path / "data2"}):
        pass


def test_nsframe_serve_says_which_roots_overlap_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nsframe._cli", "serve", str(tmp_path / "main"),
         "--database", f"sales={tmp_path / 'main' / 'sales'}", "--port", "0"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("nsframe serve: Databases may not share storage: the root "
                                  "of database 'sales'"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "main").exists()  # refused before anything was written


@pytest.mark.parametrize("roots, overlap", [
    (["s3://b/a", "s3://b/a/sales"], True),
    (["s3://b/a/", "s3://b/a"], True),
    (["s3://b/a", "s3+ddb://b/a/x?ddbTableName=t"], True),
    (["s3://b", "s3://b/a"], True),
    (["s3://b/a", "s3://b/ab"], False),
    (["s3://b/a", "s3://c/a"], False),
    (["s3://b/a", "s3://b/A/x"], False),   # object keys are case-sensitive
    (["s3://b/a", "gs://b/a/x"], False),
    (["/srv/a", "s3://b/srv/a/x"], False),
])
def test_overlapping_object_store_roots(roots: list[str], overlap: bool) -> None:
    from nsframe.server._storage.location import overlapping_roots

    found = overlapping_roots({str(i): r for i, r in enumerate(roots)})
    assert (found is not None) == overlap, found


def test_config_check_names_the_two_databases(tmp_path: Path) -> None:
    from nsframe.server._storage.location import overlapping_roots

    config = ServerConfig(root=tmp_path, databases={"sales": tmp_path / "sales"})
    found = overlapping_roots({"": config.root, **config.databases})
    assert found is not None and "'sales'" in found and "default" in found
