"""The client against pylance's reference server, `lance.namespace.RestAdapter`.

It speaks upstream's flavour of the contract (`{"code", "error"}` error bodies, 201s,
`{"count": n}`), so these tests show the client holds to the contract rather than to our
server. Covered: namespaces, create, insert, query, delete, versions, restore, tags,
branches, merge_insert, update, add/alter/drop columns, explain/analyze plans, register and
deregister, and searches that name no column. Not covered there: ListAllTables (the
adapter answers an empty list) and rename (the adapter answers "not implemented").
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
def reference_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


@pytest.fixture(scope="module")
def adapter_conn(reference_root: Path) -> Iterator[nsframe.Connection]:
    root = reference_root
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


# ------------------------------------------------------- operations added with LanceDB's
def test_search_names_the_columns_the_reference_does_not_infer(
    adapter_conn: nsframe.Connection, request: pytest.FixtureRequest
) -> None:
    # The reference server searches a column named "vector" only, and a text search
    # without an index needs its columns named: the client names them from the schema.
    name = request.node.name
    adapter_conn.create_namespace(name)
    tbl = adapter_conn.create_table(f"{name}$docs", pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "body": ["red apple", "green pear", "red sky"],
        "emb": pa.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]], pa.list_(pa.float32(), 2)),
    }))
    nearest = tbl.search([1.0, 0.1]).limit(2).select(["id"]).to_list()
    assert [r["id"] for r in nearest] == [1, 3]
    found = tbl.search("red").limit(5).to_pandas()
    assert sorted(found["id"].tolist()) == [1, 3]
    assert "KNN" in tbl.search([1.0, 0.1]).limit(1).explain_plan()
    assert "output_rows" in tbl.search([1.0, 0.1]).limit(1).analyze_plan()


def test_merge_insert_and_update(tbl: nsframe.Table) -> None:
    result = (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
              .execute(data(8, 4)))
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 2)
    assert tbl.count_rows() == 12
    assert tbl.update("id >= 10", values_sql={"id": "id + 100"}).num_rows == 2
    assert tbl.count_rows("id > 100") == 2
    assert tbl.update("id = 0", values={"id": 50}).num_rows == 1
    assert tbl.count_rows("id = 50") == 1


def test_columns(tbl: nsframe.Table) -> None:
    tbl.add_columns({"double": "id * 2"})
    assert tbl.search().where("id = 3").select(["double"]).to_list() == [{"double": 6}]
    tbl.alter_columns({"path": "double", "rename": "twice"})
    assert "twice" in tbl.schema.names
    tbl.drop_columns(["twice"])
    assert tbl.schema.names == ["id", "vector"]


def test_deregister_and_register(adapter_conn: nsframe.Connection, tbl: nsframe.Table,
                                 reference_root: Path) -> None:
    location = adapter_conn.deregister_table(tbl.id)
    assert location is not None
    with pytest.raises(TableNotFoundError):
        tbl.count_rows()
    # The reference server takes a path relative to its root.
    relative = Path(location.removeprefix("file://")).relative_to(reference_root)
    again = adapter_conn.register_table(f"{tbl.namespace[0]}$again", str(relative))
    assert again.count_rows() == 10
