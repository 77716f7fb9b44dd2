"""`Table.to_lance`, `to_daft`, `to_ray` and `storage_options` on a local root (an embedded
server): the pinned version and branch, and the refusals with what to do instead.
tests/storage/test_engines_on_roots.py runs them on s3:// and s3+ddb:// roots."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

import nsframe


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[nsframe.Connection]:
    with nsframe.connect(tmp_path / "data") as connection:
        yield connection


@pytest.fixture
def tbl(conn: nsframe.Connection) -> nsframe.Table:
    table = conn.create_table("items", {"id": [1, 2, 3]})
    table.insert({"id": [4, 5]})
    return table


def test_a_folder_needs_no_storage_options(tbl: nsframe.Table) -> None:
    assert tbl.storage_options() == {}


def test_to_lance_opens_the_handles_version_and_branch(tbl: nsframe.Table) -> None:
    ds = tbl.to_lance()
    assert (ds.uri, ds.version, ds.count_rows()) == (tbl.location, 2, 5)
    assert tbl.at(version=1).to_lance().to_table().column("id").to_pylist() == [1, 2, 3]
    dev = tbl.branches.create("dev")
    dev.delete("id > 3")
    assert dev.to_lance().count_rows() == 3
    assert tbl.to_lance().count_rows() == 5
    _ = tbl.tags.create("two", 2)
    assert tbl.at(tag="two").to_lance().version == 2


def test_to_daft_reads_the_pinned_version_and_refuses_a_branch(tbl: nsframe.Table) -> None:
    pytest.importorskip("daft", reason="needs the engines extra (`make` installs it)")
    assert sorted(tbl.to_daft().to_pydict()["id"]) == [1, 2, 3, 4, 5]
    assert sorted(tbl.at(version=1).to_daft().to_pydict()["id"]) == [1, 2, 3]
    tbl.branches.create("dev")
    with pytest.raises(ValueError, match=r"main branch only.*to_lance"):
        tbl.branch("dev").to_daft()


def test_a_declared_table_has_no_dataset_yet(conn: nsframe.Connection) -> None:
    declared = conn.create_table("later")  # neither data nor schema: only declared
    with pytest.raises(ValueError, match=r"only declared.*insert data"):
        declared.to_lance()


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="Ray is installed")
def test_to_ray_without_ray_names_the_extra(tbl: nsframe.Table) -> None:
    with pytest.raises(ImportError, match=r"to_ray\(\) needs ray.*nsframe\[ray\]"):
        tbl.to_ray()
