"""Two more clients of the Lance ecosystem against nsframe's server, data checked at every step.

- LanceDB's namespace connection (`lancedb.connect_namespace("rest", {"uri": url})`): it
  declares a table, writes the dataset itself at the location the answer names, then
  reads it through describe's location.
- pylance's `RestNamespace`: create and describe carry the location; register and
  deregister; every operation added for the ecosystem (merge_insert, update, add/alter/drop
  columns, schema metadata, explain and analyze plans, rename, query columns).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import lance_namespace as ln
import lancedb
import pandas as pd
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import errors as ns_errors

from tests.support import ipc_stream, read_ipc_file

pytestmark = pytest.mark.upstream


def fresh() -> str:
    return f"e{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------ LanceDB's namespace connection
def test_lancedb_namespace_connection(base_url: str, root: Path) -> None:
    db = lancedb.connect_namespace("rest", {"uri": base_url})
    name = fresh()
    frame = pd.DataFrame({"id": [1, 2, 3], "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    tbl = db.create_table(name, frame)
    assert tbl.count_rows() == 3
    # The dataset is where the server reserved it, under its root.
    location = Path(tbl.uri.removeprefix("file://"))
    assert location.is_relative_to(root) and (location / "_versions").is_dir()
    added = db.open_table(name).add(pd.DataFrame({"id": [4], "vector": [[0.9, 0.1]]}))
    assert added.version == 2
    nearest = db.open_table(name).search([1.0, 0.0]).limit(2).to_pandas()
    assert nearest["id"].tolist() == [1, 4]
    assert name in db.list_tables().tables
    db.drop_table(name)
    assert name not in db.list_tables().tables
    assert not location.exists()


# ------------------------------------------------------------- pylance's RestNamespace
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("text", pa.string()),
                    pa.field("vec", pa.list_(pa.float32(), 2))])


def rows(ids: list[int]) -> bytes:
    return ipc_stream({"id": ids, "text": [f"row {i}" for i in ids],
                       "vec": [[float(i), 0.0] for i in ids]}, schema=SCHEMA)


def read(rest: RestNamespace, table: list[str], **query: Any) -> list[dict[str, Any]]:
    answer = rest.query_table(ln.QueryTableRequest(id=table, k=0, vector={}, **query))
    return sorted(read_ipc_file(answer.data).to_pylist(), key=lambda r: r.get("id", 0))


@pytest.fixture
def rest(base_url: str) -> RestNamespace:
    return RestNamespace(uri=base_url)  # type: ignore[no-untyped-call]


@pytest.fixture
def table(rest: RestNamespace) -> list[str]:
    name = fresh()
    rest.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    return [name, "t"]


def test_rest_namespace_locations_register_and_deregister(
    rest: RestNamespace, table: list[str], root: Path
) -> None:
    created = rest.create_table(ln.CreateTableRequest(id=table), rows([1, 2, 3]))
    assert created.location and (Path(created.location) / "_versions").is_dir()
    described = rest.describe_table(ln.DescribeTableRequest(id=table, with_table_uri=True))
    assert described.location == created.location == described.table_uri
    declared = rest.declare_table(ln.DeclareTableRequest(id=[table[0], "later"]))
    assert declared.location and Path(declared.location).is_relative_to(root)

    gone = rest.deregister_table(ln.DeregisterTableRequest(id=table))
    assert gone.location == created.location
    with pytest.raises(ns_errors.TableNotFoundError):
        rest.describe_table(ln.DescribeTableRequest(id=table))
    relative = os.path.relpath(created.location, root)
    again = [table[0], "again"]
    registered = rest.register_table(ln.RegisterTableRequest(id=again, location=relative))
    assert registered.location == relative  # as sent; describe has the full location
    assert rest.describe_table(ln.DescribeTableRequest(id=again)).location == created.location
    assert rest.count_table_rows(ln.CountTableRowsRequest(id=again)).count == 3
    with pytest.raises(ns_errors.TableAlreadyExistsError):
        rest.register_table(ln.RegisterTableRequest(id=[table[0], "twice"],
                                                    location=created.location))


def test_rest_namespace_changes(rest: RestNamespace, table: list[str]) -> None:
    rest.create_table(ln.CreateTableRequest(id=table), rows([1, 2, 3]))
    merged = rest.merge_insert_into_table(
        ln.MergeInsertIntoTableRequest(id=table, on=["id"], when_matched_update_all=True,
                                       when_not_matched_insert_all=True),
        ipc_stream({"id": [3, 4], "text": ["three", "four"], "vec": [[3.0, 3.0], [4.0, 4.0]]},
                   schema=SCHEMA))
    assert (merged.num_updated_rows, merged.num_inserted_rows, merged.version) == (1, 1, 2)
    assert [r["text"] for r in read(rest, table)] == ["row 1", "row 2", "three", "four"]

    updated = rest.update_table(ln.UpdateTableRequest(id=table, updates=[["text", "'new'"]],
                                                      predicate="id <= 2"))
    assert (updated.updated_rows, updated.version) == (2, 3)
    assert [r["text"] for r in read(rest, table)][:2] == ["new", "new"]

    added = rest.alter_table_add_columns(ln.AlterTableAddColumnsRequest(
        id=table, new_columns=[{"name": "double", "expression": "id * 2"}]))
    assert added.version == 4
    assert [r["double"] for r in read(rest, table)] == [2, 4, 6, 8]
    altered = rest.alter_table_alter_columns(ln.AlterTableAlterColumnsRequest(
        id=table, alterations=[{"path": "double", "rename": "twice"}]))
    assert altered.version == 5
    dropped = rest.alter_table_drop_columns(ln.AlterTableDropColumnsRequest(
        id=table, columns=["twice"]))
    assert dropped.version == 6
    assert set(read(rest, table)[0]) == {"id", "text", "vec"}

    metadata = rest.update_table_schema_metadata(ln.UpdateTableSchemaMetadataRequest(
        id=table, metadata={"owner": "ana"}))
    assert metadata.metadata == {"owner": "ana"}

    query = ln.QueryTableRequest(id=table, k=2, vector={"single_vector": [4.0, 4.0]},
                                 vector_column="vec",
                                 columns={"column_names": ["id", "_distance"]})
    nearest = read_ipc_file(rest.query_table(query).data)
    assert nearest.column_names == ["id", "_distance"] and nearest["id"].to_pylist() == [4, 3]
    plan = rest.explain_table_query_plan(ln.ExplainTableQueryPlanRequest(id=table, query=query))
    assert "KNN" in plan
    analyzed = rest.analyze_table_query_plan(ln.AnalyzeTableQueryPlanRequest(
        id=table, k=2, vector={"single_vector": [4.0, 4.0]}, vector_column="vec"))
    assert "output_rows" in analyzed

    rest.rename_table(ln.RenameTableRequest(id=table, new_table_name="renamed"))
    renamed = [table[0], "renamed"]
    assert rest.count_table_rows(ln.CountTableRowsRequest(id=renamed)).count == 4
    assert rest.list_tables(ln.ListTablesRequest(id=[table[0]])).tables == ["renamed"]


def test_rest_namespace_table_version_records_are_unsupported(
    rest: RestNamespace, table: list[str]
) -> None:
    rest.create_table(ln.CreateTableRequest(id=table), rows([1]))
    request = ln.CreateTableVersionRequest(id=table, version=9, manifest_path="x").to_dict()
    with pytest.raises(ns_errors.UnsupportedOperationError):
        rest.create_table_version(request)
    ranges = [{"start_version": 1, "end_version": 2}]
    request = ln.BatchDeleteTableVersionsRequest(id=table, ranges=ranges).to_dict()
    with pytest.raises(ns_errors.UnsupportedOperationError):
        rest.batch_delete_table_versions(request)
    assert rest.count_table_rows(ln.CountTableRowsRequest(id=table)).count == 1


# ------------------------------------------------ the generated urllib3 client
def test_generated_client_new_operations(base_url: str, root: Path) -> None:
    from lance_namespace_urllib3_client.api.table_api import TableApi
    from lance_namespace_urllib3_client.api_client import ApiClient
    from lance_namespace_urllib3_client.configuration import Configuration
    from lance_namespace_urllib3_client.exceptions import NotFoundException

    name = fresh()
    with ApiClient(Configuration(host=base_url)) as client:
        tables = TableApi(client)
        ident = f"{name}$t"
        RestNamespace(uri=base_url).create_namespace(  # type: ignore[no-untyped-call]
            ln.CreateNamespaceRequest(id=[name]))
        made = tables.create_table(ident, rows([1, 2, 3]))
        assert made.location and (Path(made.location) / "_versions").is_dir()
        merged = tables.merge_insert_into_table(
            ident, ["id"], ipc_stream({"id": [3, 4], "text": ["c", "d"],
                                       "vec": [[3.0, 3.0], [4.0, 4.0]]}, schema=SCHEMA),
            when_matched_update_all=True, when_not_matched_insert_all=True)
        assert (merged.num_updated_rows, merged.num_inserted_rows, merged.version) == (1, 1, 2)
        updated = tables.update_table(ident, ln.UpdateTableRequest(
            updates=[["text", "'z'"]], predicate="id = 1"))
        assert (updated.updated_rows, updated.version) == (1, 3)
        assert tables.alter_table_add_columns(ident, ln.AlterTableAddColumnsRequest(
            new_columns=[{"name": "d", "expression": "id * 2"}])).version == 4
        assert tables.alter_table_alter_columns(ident, ln.AlterTableAlterColumnsRequest(
            alterations=[{"path": "d", "rename": "e"}])).version == 5
        assert tables.alter_table_drop_columns(ident, ln.AlterTableDropColumnsRequest(
            columns=["e"])).version == 6
        assert tables.update_table_schema_metadata(ident, {"k": "v"}) == {"k": "v"}
        query = ln.QueryTableRequest(k=1, vector={"single_vector": [4.0, 4.0]})
        assert "KNN" in tables.explain_table_query_plan(
            ident, ln.ExplainTableQueryPlanRequest(query=query))
        assert "output_rows" in tables.analyze_table_query_plan(
            ident, ln.AnalyzeTableQueryPlanRequest(k=1, vector={"single_vector": [4.0, 4.0]}))
        tables.rename_table(ident, ln.RenameTableRequest(new_table_name="r"))
        gone = tables.deregister_table(f"{name}$r", ln.DeregisterTableRequest())
        assert gone.location == made.location
        back = tables.register_table(f"{name}$back", ln.RegisterTableRequest(
            location=os.path.relpath(made.location, root)))
        assert back.location == os.path.relpath(made.location, root)  # as sent
        with pytest.raises(NotFoundException):
            tables.create_table_version(f"{name}$back", ln.CreateTableVersionRequest(
                version=9, manifest_path="x"))
        with pytest.raises(NotFoundException):
            tables.batch_delete_table_versions(f"{name}$back", ln.BatchDeleteTableVersionsRequest(
                ranges=[{"start_version": 1, "end_version": 2}]))
