"""LanceDB's remote client (`lancedb.connect("db://...", host_override=url)`) against
`nsframe serve`, through a whole workflow, checking the data at every step.

That client speaks LanceDB's dialect of the protocol (`_http.dialect`): trailing slashes,
Lance's JSON schema, a bare map of tags, root-only table listing, its own query body.
A server of its own, so that `table_names()` sees only this module's tables.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import pandas as pd
import pyarrow as pa
import pytest
import requests
from lancedb.index import BTree

from nsframe.server import RunningServer, serve_in_thread
from tests.support import ARROW_HEADERS, ipc_stream

pytestmark = [
    pytest.mark.upstream,
    # The issue asks for table_names(), which LanceDB 0.40 deprecates for list_tables().
    pytest.mark.filterwarnings("ignore:table_names:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("lancedb")) as running:
        yield running


@pytest.fixture(scope="module")
def db(served: RunningServer) -> Any:
    return lancedb.connect("db://nsframe", api_key="key", host_override=served.url)


def frame(ids: list[int], texts: list[str], vectors: list[list[float]]) -> pd.DataFrame:
    return pd.DataFrame({"id": ids, "text": texts, "vector": vectors})


def rows(tbl: Any) -> list[dict[str, Any]]:
    """Every row of the table's current version, by id (LanceDB's remote tables have
    no to_pandas(): a query without a vector reads them)."""
    table = tbl.search().limit(1000).to_arrow()
    return sorted(table.select(["id", "text"]).to_pylist(), key=lambda r: r["id"])


def test_lancedb_remote_client_workflow(db: Any, served: RunningServer) -> None:
    name = f"items_{uuid.uuid4().hex[:8]}"
    # Create from pandas, add, count.
    tbl = db.create_table(name, frame([1, 2, 3], ["red apple", "green pear", "blue sky"],
                                      [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    assert tbl.count_rows() == 3
    assert tbl.schema.field("text").type in (pa.string(), pa.large_string())
    added = tbl.add(frame([4], ["red car"], [[0.9, 0.1]]))
    assert added.version == 2
    assert tbl.count_rows() == 4
    assert tbl.count_rows("id >= 3") == 2

    # Vector search, filtered search.
    nearest = tbl.search([1.0, 0.0]).limit(2).to_pandas()
    assert nearest["id"].tolist() == [1, 4]
    assert nearest["_distance"].iloc[0] == pytest.approx(0.0)
    filtered = tbl.search([1.0, 0.0]).where("id > 1").limit(2).to_pandas()
    assert filtered["id"].tolist() == [4, 3]
    assert tbl.search().where("text = 'green pear'").to_pandas()["id"].tolist() == [2]
    # The columns a search adds may be selected by name.
    picked = tbl.search([1.0, 0.0]).select(["id", "_distance"]).limit(1).to_arrow()
    assert picked.column_names == ["id", "_distance"]

    # Full-text index and search.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # create_fts_index is deprecated
        tbl.create_fts_index("text")
    found = tbl.search("red", query_type="fts").limit(10).to_pandas()
    assert sorted(found["id"].tolist()) == [1, 4]
    assert (found["_score"] > 0).all()

    # merge_insert (upsert), update, delete.
    merged = (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
              .execute(frame([1, 5], ["red berry", "pink fig"], [[1.0, 0.1], [0.2, 0.2]])))
    assert (merged.num_updated_rows, merged.num_inserted_rows) == (1, 1)
    assert rows(tbl) == [{"id": 1, "text": "red berry"}, {"id": 2, "text": "green pear"},
                         {"id": 3, "text": "blue sky"}, {"id": 4, "text": "red car"},
                         {"id": 5, "text": "pink fig"}]
    updated = tbl.update(where="id = 2", values={"text": "yellow pear"})
    assert updated.rows_updated == 1
    assert tbl.update(where="id = 5", values_sql={"id": "id + 10"}).rows_updated == 1
    deleted = tbl.delete("id = 3")
    assert deleted.version == updated.version + 2
    assert rows(tbl) == [{"id": 1, "text": "red berry"}, {"id": 2, "text": "yellow pear"},
                         {"id": 4, "text": "red car"}, {"id": 15, "text": "pink fig"}]
    after_delete = deleted.version

    # Add, alter and drop columns.
    tbl.add_columns({"double_id": "id * 2"})
    got = tbl.search().select(["id", "double_id"]).limit(100).to_arrow().to_pylist()
    assert sorted((r["id"], r["double_id"]) for r in got) == [(1, 2), (2, 4), (4, 8), (15, 30)]
    tbl.alter_columns({"path": "double_id", "rename": "twice", "data_type": pa.int32()})
    assert tbl.schema.field("twice").type == pa.int32()
    tbl.drop_columns(["twice"])
    assert "twice" not in tbl.schema.names

    # Indices: create and list (the FTS index is there too).
    tbl.create_index("id", config=BTree())
    indices = {ix.name: ix for ix in tbl.list_indices()}
    assert indices["id_idx"].columns == ["id"]
    assert {"text_idx", "id_idx"} <= set(indices)

    # Versions: list, checkout, restore.
    versions = [v["version"] for v in tbl.list_versions()]
    assert versions == list(range(1, max(versions) + 1))
    assert after_delete in versions
    tbl.checkout(2)
    assert tbl.count_rows() == 4
    assert [r["id"] for r in rows(tbl)] == [1, 2, 3, 4]
    tbl.checkout_latest()
    assert [r["id"] for r in rows(tbl)] == [1, 2, 4, 15]
    tbl.restore(2)
    assert [r["text"] for r in rows(tbl)] == ["red apple", "green pear", "blue sky", "red car"]
    assert tbl.version == max(versions) + 1

    # Tags: create, list, get_version, delete.
    tbl.tags.create("first", 1)
    tbl.tags.create("added", 2)
    listed = tbl.tags.list()
    assert {k: v["version"] for k, v in listed.items()} == {"first": 1, "added": 2}
    assert tbl.tags.get_version("first") == 1
    tbl.checkout("first")
    assert tbl.count_rows() == 3
    tbl.checkout_latest()
    tbl.tags.delete("first")
    assert list(tbl.tags.list()) == ["added"]

    # Listing (root namespace, by name), an existing name, drop.
    assert name in db.table_names()
    with pytest.raises(ValueError, match="already exists"):
        db.create_table(name, frame([9], ["x"], [[0.0, 0.0]]))
    assert db.create_table(name, frame([9], ["x"], [[0.0, 0.0]]), exist_ok=True).count_rows() == 4
    db.drop_table(name)
    assert name not in db.table_names()


def test_lancedb_lists_only_root_tables_by_name(db: Any, served: RunningServer) -> None:
    with requests.Session() as http:
        ns = f"ns{uuid.uuid4().hex[:8]}"
        assert http.post(f"{served.url}/v1/namespace/{ns}/create", json={}).ok
        assert http.post(f"{served.url}/v1/table/{ns}$inner/create",
                         data=ipc_stream({"id": [1]}), headers=ARROW_HEADERS).ok
        top = f"top_{uuid.uuid4().hex[:8]}"
        db.create_table(top, pd.DataFrame({"id": [1]}))
        names = db.table_names(limit=1000)
        assert top in names and not any("$" in n for n in names)
        # LanceDB pages by the last name it saw.
        first = db.table_names(limit=1)
        assert first == names[:1]
        assert db.table_names(page_token=first[0], limit=1000) == names[1:]
        # The namespace protocol's ListAllTables still lists every table by full id.
        everything = http.get(f"{served.url}/v1/table").json()["tables"]
        assert f"{ns}$inner" in everything and top in everything
        db.drop_table(top)


def test_lancedb_rename_and_namespaced_tables(db: Any, served: RunningServer) -> None:
    old, new = f"old_{uuid.uuid4().hex[:8]}", f"new_{uuid.uuid4().hex[:8]}"
    db.create_table(old, pd.DataFrame({"id": [1, 2]}))
    db.rename_table(old, new)
    assert new in db.table_names() and old not in db.table_names()
    assert db.open_table(new).count_rows() == 2
    db.drop_table(new)


def test_lancedb_plans(db: Any) -> None:
    name = f"plan_{uuid.uuid4().hex[:8]}"
    tbl = db.create_table(name, frame([1, 2], ["a", "b"], [[1.0, 0.0], [0.0, 1.0]]))
    plan = tbl.search([1.0, 0.0]).limit(1).explain_plan(True)
    assert "_distance" in plan and "/tmp" not in plan and str(Path.home()) not in plan
    analyzed = tbl.search([1.0, 0.0]).limit(1).analyze_plan()
    assert "output_rows" in analyzed
    db.drop_table(name)



def test_take_offsets_and_row_ids(db: Any) -> None:
    """LanceDB's take_offsets sends `_rowoffset` among the columns and in the filter; it
    got a 404 ('column _rowoffset is not in the table'), which LanceDB shows as 'table
    not found'."""
    tbl = db.create_table(f"take_{uuid.uuid4().hex[:8]}",
                          frame([1, 2, 3], ["a", "b", "c"], [[1.0, 0.0]] * 3))
    assert tbl.take_offsets([0, 2]).to_pandas()["id"].tolist() == [1, 3]
    assert sorted(tbl.take_row_ids([0, 2]).to_pandas()["id"].tolist()) == [1, 3]
