"""The client against pylance's reference server, `lance.namespace.RestAdapter`.

It speaks upstream's flavour of the contract (`{"code", "error"}` error bodies, 201s,
`{"count": n}`), so these tests show the client holds to the contract rather than to our
server. Covered: namespaces, create, insert, query, delete, versions, restore, tags,
branches. Not covered there: ListAllTables (the adapter answers an empty list).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance.namespace as namespace
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import NotFoundError, TableNotFoundError


@pytest.fixture(scope="module")
def adapter_conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[nsframe.Connection]:
    root: Path = tmp_path_factory.mktemp("reference")
    with namespace.RestAdapter("dir", {"root": str(root)}, port=0) as adapter, \
            nsframe.connect(f"http://127.0.0.1:{adapter.port}") as conn:
        yield conn


def data(start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "vector": pa.array([[float(i), 0.0] for i in range(start, start + n)],
                           pa.list_(pa.float32(), 2)),
    })


@pytest.fixture
def tbl(adapter_conn: nsframe.Connection, request: pytest.FixtureRequest) -> nsframe.Table:
    name = request.node.name.replace("[", "_").replace("]", "")
    adapter_conn.create_namespace(name)
    return adapter_conn.create_table(f"{name}$items", data(0, 10))


def test_namespaces_and_tables(adapter_conn: nsframe.Connection, tbl: nsframe.Table) -> None:
    ns = tbl.namespace[0]
    assert ns in adapter_conn.namespaces()
    assert adapter_conn.table_names(ns) == [tbl.id]
    assert tbl.schema.field("vector").type == pa.list_(pa.float32(), 2)
    assert tbl.version == 1


def test_insert_query_and_count(tbl: nsframe.Table) -> None:
    result = tbl.insert(data(10, 5))
    assert tbl.count_rows() == 15
    assert tbl.count_rows("id >= 12") == 3
    assert result.version in (2, None)
    nearest = tbl.search([12.2, 0.0]).limit(2).select(["id"]).to_list()
    assert [r["id"] for r in nearest] == [12, 13]
    scan = tbl.search().where("id < 3").to_pandas()
    assert sorted(scan["id"].tolist()) == [0, 1, 2]
    assert tbl.to_arrow(page_rows=4).num_rows == 15


def test_delete_versions_and_restore(tbl: nsframe.Table) -> None:
    tbl.delete("id >= 5")
    assert tbl.count_rows() == 5
    assert [v.version for v in tbl.versions()] == [1, 2]
    assert tbl.at(version=1).count_rows() == 10
    tbl.restore(1)
    assert tbl.count_rows() == 10


def test_tags(tbl: nsframe.Table) -> None:
    tbl.delete("id = 0")
    tbl.create_tag("original", 1)
    assert tbl.tag_version("original") == 1
    assert list(tbl.tags()) == ["original"]
    assert tbl.at(tag="original").count_rows() == 10
    tbl.restore("original")
    assert tbl.count_rows() == 10
    tbl.delete_tag("original")
    assert tbl.tags() == {}
    with pytest.raises(NotFoundError):
        tbl.tag_version("original")


def test_branches_list(tbl: nsframe.Table) -> None:
    assert tbl.branches() == {}
    exp = tbl.create_branch("exp")
    branches = tbl.branches()
    assert list(branches) == ["exp"]
    assert branches["exp"].parent_version == 1
    assert exp.count_rows() == 10
    # Writes to a branch are not checked here: the adapter ignores `branch` on insert
    # and count_rows (the rows land on main), so only listing/creating/deleting is tested.
    tbl.delete_branch("exp")
    assert tbl.branches() == {}


def test_errors_map_from_upstream_bodies(adapter_conn: nsframe.Connection) -> None:
    with pytest.raises(TableNotFoundError) as info:
        adapter_conn.table("nowhere$t").count_rows()
    assert info.value.code == 4 and info.value.status == 404
