"""The client's in-place changes against nsframe's server: merge_insert, df.ns.upsert,
update, add/alter/drop columns, rename/register/deregister, and query plans."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import (
    ColumnNotFoundError,
    ReadOnlyTableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)


@pytest.fixture
def tbl(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    frame = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", "c"],
                          "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    return conn.create_table(f"{ns}$items", frame)


def names(tbl: nsframe.Table) -> dict[int, Any]:
    return dict(tbl.to_pandas().sort_values("id")[["id", "name"]].itertuples(index=False))


def test_merge_insert_builder(tbl: nsframe.Table) -> None:
    merge = tbl.merge_insert("id")
    upsert = merge.when_matched_update_all().when_not_matched_insert_all()
    assert merge != upsert  # each step is a new builder
    result = upsert.execute(pd.DataFrame({"id": [2, 4], "name": ["B", "d"],
                                          "vector": [[0.0, 2.0], [3.0, 3.0]]}))
    assert (result.num_updated_rows, result.num_inserted_rows, result.version) == (1, 1, 2)
    assert names(tbl) == {1: "a", 2: "B", 3: "c", 4: "d"}
    # Make the table exactly the new data.
    sync = (tbl.merge_insert(on=["id"]).when_matched_update_all()
            .when_not_matched_insert_all().when_not_matched_by_source_delete())
    # Arrow input is sent as it is (as for insert): with the table's own types.
    result = sync.execute(pa.table({"id": pa.array([1, 9], pa.int64()),
                                    "name": pa.array(["x", "y"], pa.large_string()),
                                    "vector": pa.array([[1.0, 1.0], [9.0, 9.0]],
                                                       pa.list_(pa.float32(), 2))}))
    assert result.num_deleted_rows == 3
    assert names(tbl) == {1: "x", 9: "y"}
    with pytest.raises(ValueError, match="does nothing"):
        tbl.merge_insert("id").execute(pd.DataFrame({"id": [1]}))
    with pytest.raises(ReadOnlyTableError):
        tbl.at(1).merge_insert("id").when_not_matched_insert_all().execute(
            pd.DataFrame({"id": [5]}))


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars-lazy"])
def test_df_ns_upsert(tbl: nsframe.Table, kind: str) -> None:
    data = {"id": [3, 5], "name": ["C", "e"], "vector": [[1.0, 2.0], [5.0, 5.0]]}
    frame: Any = pd.DataFrame(data) if kind == "pandas" else pl.DataFrame(data)
    if kind == "polars-lazy":
        frame = frame.lazy()
    result = frame.ns.upsert(tbl, on="id")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert names(tbl) == {1: "a", 2: "b", 3: "C", 5: "e"}
    assert tbl.schema.field("vector").type == pa.list_(pa.float32(), 2)


def test_upsert_by_table_id_and_a_subset_of_columns(conn: nsframe.Connection,
                                                    tbl: nsframe.Table) -> None:
    pd.DataFrame({"id": [1], "name": ["only the name"]}).ns.upsert(tbl.id, conn=conn)
    row = tbl.search().where("id = 1").to_list()[0]
    assert row["name"] == "only the name" and row["vector"] == [1.0, 0.0]


def test_update(tbl: nsframe.Table) -> None:
    result = tbl.update("id >= 2", values={"name": "it's"})
    assert (result.num_rows, result.version) == (2, 2)
    assert names(tbl) == {1: "a", 2: "it's", 3: "it's"}
    assert tbl.update(values_sql={"id": "id * 10"}).num_rows == 3
    assert sorted(names(tbl)) == [10, 20, 30]
    with pytest.raises(ValueError):
        tbl.update("id = 1")
    with pytest.raises(ColumnNotFoundError):
        tbl.update(values={"nope": 1})


def test_add_alter_drop_columns(tbl: nsframe.Table) -> None:
    tbl.add_columns({"double": "id * 2"})
    tbl.add_columns([pa.field("seen", pa.timestamp("ms", "UTC")), pa.field("n", pa.int16())])
    schema = tbl.schema
    assert schema.field("seen").type == pa.timestamp("ms", "UTC")
    assert schema.field("n").type == pa.int16()
    assert tbl.to_pandas().sort_values("id")["double"].tolist() == [2, 4, 6]
    tbl.alter_columns({"path": "double", "rename": "twice", "data_type": pa.int32()},
                      {"path": "name", "name": "label"})
    assert tbl.schema.field("twice").type == pa.int32()
    assert "label" in tbl.schema.names and "name" not in tbl.schema.names
    result = tbl.drop_columns(["twice", "seen", "n"])
    assert tbl.schema.names == ["id", "label", "vector"]
    assert tbl.at(result.version - 1).schema.names[-1] == "n"


def test_rename_register_deregister(conn: nsframe.Connection, tbl: nsframe.Table, ns: str,
                                    root: Path) -> None:
    renamed = conn.rename_table(tbl.id, "moved")
    assert renamed.id == f"{ns}$moved" and renamed.count_rows() == 3
    assert conn.table_names(ns) == [f"{ns}$moved"]
    conn.create_namespace(f"{ns}$other")
    moved = conn.rename_table(renamed.id, f"{ns}$other$there")
    assert moved.count_rows() == 3
    with pytest.raises(TableNotFoundError):
        tbl.count_rows()
    location = conn.deregister_table(moved.id)
    assert location is not None and Path(location).is_dir()
    assert conn.table_names(f"{ns}$other") == []
    again = conn.register_table(f"{ns}$back", os.path.relpath(location, root))
    assert again.count_rows() == 3 and [v.version for v in again.versions()] == [1]
    conn.create_table(f"{ns}$taken", pd.DataFrame({"id": [1]}))
    with pytest.raises(TableAlreadyExistsError):
        conn.rename_table(again.id, "taken")


def test_plans(tbl: nsframe.Table, root: Path) -> None:
    query = tbl.search([1.0, 0.0]).where("id > 1").limit(1)
    plan = query.explain_plan(verbose=True)
    assert "KNN" in plan and str(root).lstrip("/") not in plan
    assert "output_rows" in query.analyze_plan()
    assert "LanceRead" in tbl.search().where("id = 1").explain_plan()


def test_search_columns_may_be_selected(tbl: nsframe.Table) -> None:
    nearest = tbl.search([1.0, 0.0]).select(["id", "_distance"]).limit(1).to_arrow()
    assert nearest.column_names == ["id", "_distance"]
    scan = tbl.search().where("id = 2").select(["_rowid", "name"]).to_arrow()
    assert scan.column_names == ["_rowid", "name"] and scan["name"].to_pylist() == ["b"]
