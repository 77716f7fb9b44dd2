"""Primary keys from the client: ``primary_key=`` on create_table and df.ns.to_table, the
key in the schema, and merges on it (docs/server.md, "Primary keys")."""

from __future__ import annotations

import threading

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import InvalidInputError

PK = b"lance-schema:unenforced-primary-key"


def upsert(tbl: nsframe.Table, frame: pd.DataFrame) -> None:
    tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(frame)


def test_create_table_declares_the_key(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$t", pd.DataFrame({"id": [1], "name": ["a"]}),
                            primary_key="id")
    assert tbl.primary_key == ["id"]
    field = tbl.schema.field("id")
    assert field.metadata == {PK: b"true"} and not field.nullable
    # Four merges of one new id at once: one row.
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            barrier.wait(30)
            upsert(tbl, pd.DataFrame({"id": [2], "name": [f"w{n}"]}))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(tbl.to_pandas()["id"].tolist()) == [1, 2]


def test_a_key_of_two_columns_keeps_its_order(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"a": [1], "b": [2], "v": ["x"]})
    tbl = conn.create_table(f"{ns}$t", frame, primary_key=["b", "a"])
    assert tbl.primary_key == ["b", "a"]
    merged = tbl.merge_insert(["a", "b"]).when_matched_update_all() \
        .when_not_matched_insert_all().execute(pd.DataFrame({"a": [1], "b": [2], "v": ["y"]}))
    assert (merged.num_updated_rows, merged.num_inserted_rows) == (1, 0)


def test_a_schema_carrying_the_key_declares_it(conn: nsframe.Connection, ns: str) -> None:
    """LanceDB's way: the metadata in the schema passed with the data (or alone)."""
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"lance-schema:unenforced-"
                                                             "primary-key": "true"}),
                        pa.field("name", pa.string())])
    with_data = conn.create_table(f"{ns}$a", pd.DataFrame({"id": [1], "name": ["a"]}),
                                  schema=schema)
    assert with_data.primary_key == ["id"]
    empty = conn.create_table(f"{ns}$b", schema=schema)
    assert empty.primary_key == ["id"]
    assert conn.create_table(f"{ns}$c", pd.DataFrame({"id": [1]})).primary_key == []


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_to_table_declares_the_key(conn: nsframe.Connection, ns: str, kind: str) -> None:
    data = {"id": [1, 2], "name": ["a", "b"]}
    frame = pd.DataFrame(data) if kind == "pandas" else pl.DataFrame(data)
    tbl = frame.ns.to_table(f"{ns}$t", conn=conn, primary_key="id")
    assert tbl.primary_key == ["id"]
    # An overwrite keeps the table's key, unless its data declares another.
    again = frame.ns.to_table(f"{ns}$t", conn=conn, mode="overwrite")
    assert again.primary_key == ["id"] and again.count_rows() == 2
    other = frame.ns.to_table(f"{ns}$t", conn=conn, mode="overwrite", primary_key="name")
    assert other.primary_key == ["name"]


def test_key_mistakes_are_named(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"id": [1, None], "name": ["a", "b"]})
    with pytest.raises(InvalidInputError, match="'id' holds nulls"):
        conn.create_table(f"{ns}$t", frame, primary_key="id")
    with pytest.raises(InvalidInputError, match="'nope'"):
        conn.create_table(f"{ns}$t", frame, primary_key="nope")
    tbl = conn.create_table(f"{ns}$u", pd.DataFrame({"id": [1], "name": ["a"]}),
                            primary_key="id")
    with pytest.raises(InvalidInputError, match="primary key 'id'"):
        tbl.merge_insert("name").when_not_matched_insert_all().execute(
            pd.DataFrame({"id": [1], "name": ["z"]}))
    assert tbl.count_rows() == 1
