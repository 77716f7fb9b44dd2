"""merge_insert, update, add/alter/drop columns and schema metadata over raw HTTP: each write
answers its new version, targets the branch it names, and refuses bad input with the
contract's error body, changing nothing."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, read_ipc_file

ARROW_STREAM = {"Content-Type": "application/vnd.apache.arrow.stream"}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("score", pa.float64())])


def frame(ids: list[int], names: list[str] | None = None) -> pa.Table:
    names = names or [f"n{i}" for i in ids]
    return pa.table({"id": ids, "name": names, "score": [i / 2 for i in ids]}, schema=SCHEMA)


@pytest.fixture
def table(http: requests.Session, base_url: str, ns: str) -> str:
    """Ids 0-4 at version 1."""
    ident = f"{ns}$t"
    resp = http.post(f"{base_url}/v1/table/{ident}/create", data=ipc_stream(frame([0, 1, 2, 3, 4])),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    return ident


def rows(http: requests.Session, base_url: str, ident: str, branch: str | None = None,
         ) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"k": 0}
    if branch:
        body["branch"] = branch
    resp = http.post(f"{base_url}/v1/table/{ident}/query", json=body)
    assert resp.status_code == 200, resp.text
    return sorted(read_ipc_file(resp.content).to_pylist(), key=lambda r: r["id"])


def merge(http: requests.Session, base_url: str, ident: str, data: pa.Table,
          **params: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{ident}/merge_insert", data=ipc_stream(data),
                     params=params, headers=ARROW_STREAM)


def post(http: requests.Session, base_url: str, ident: str, action: str,
         body: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{ident}/{action}", json=body)


def version(http: requests.Session, base_url: str, ident: str) -> int:
    resp = http.post(f"{base_url}/v1/table/{ident}/describe", json={})
    return int(resp.json()["version"])


# ---------------------------------------------------------------------- merge_insert
def test_merge_insert_upserts_and_answers_counts(http: requests.Session, base_url: str,
                                                 table: str) -> None:
    resp = merge(http, base_url, table, frame([3, 4, 5], ["three", "four", "five"]),
                 on="id", when_matched_update_all="true", when_not_matched_insert_all="true")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"version": 2, "num_inserted_rows": 1, "num_updated_rows": 2,
                           "num_deleted_rows": 0}
    got = {r["id"]: r["name"] for r in rows(http, base_url, table)}
    assert got == {0: "n0", 1: "n1", 2: "n2", 3: "three", 4: "four", 5: "five"}


def test_merge_insert_by_source_delete_and_conditions(http: requests.Session, base_url: str,
                                                      table: str) -> None:
    # Replace ids >= 2 with the new data: rows missing from the source are deleted.
    resp = merge(http, base_url, table, frame([2, 9], ["two", "nine"]), on="id",
                 when_matched_update_all="true", when_not_matched_insert_all="true",
                 when_not_matched_by_source_delete_filt="id >= 2")
    assert resp.status_code == 200, resp.text
    assert (resp.json()["num_deleted_rows"], resp.json()["num_inserted_rows"]) == (2, 1)
    assert [r["id"] for r in rows(http, base_url, table)] == [0, 1, 2, 9]
    # Update only where the condition holds (target./source. prefixes, as Lance takes them).
    resp = merge(http, base_url, table, frame([0, 1], ["zero", "one"]), on="id",
                 when_matched_update_all_filt="target.id = 1")
    assert resp.json()["num_updated_rows"] == 1
    assert {r["id"]: r["name"] for r in rows(http, base_url, table)}[0] == "n0"


def test_merge_insert_with_a_subset_of_columns_keeps_the_others(
    http: requests.Session, base_url: str, table: str
) -> None:
    partial = pa.table({"id": pa.array([1], pa.int64()), "name": ["uno"]})
    resp = merge(http, base_url, table, partial, on="id", when_matched_update_all="true")
    assert resp.status_code == 200, resp.text
    one = next(r for r in rows(http, base_url, table) if r["id"] == 1)
    assert one == {"id": 1, "name": "uno", "score": 0.5}


def test_merge_insert_refusals_change_nothing(http: requests.Session, base_url: str,
                                              table: str) -> None:
    data = frame([1])
    assert_error(merge(http, base_url, table, data, when_matched_update_all="true"), 400, 13)
    assert_error(merge(http, base_url, table, data, on="id"), 400, 13)
    assert_error(merge(http, base_url, table, data, on="nope",
                       when_matched_update_all="true"), 404, 12)
    wrong = pa.table({"id": ["x"]})
    assert_error(merge(http, base_url, table, wrong, on="id",
                       when_matched_update_all="true"), 400, 20)
    assert_error(merge(http, base_url, f"{table}_missing", data, on="id",
                       when_matched_update_all="true"), 404, 4)
    assert version(http, base_url, table) == 1


def test_merge_insert_on_a_branch_leaves_main(http: requests.Session, base_url: str,
                                              table: str) -> None:
    assert post(http, base_url, table, "branches/create", {"name": "exp"}).status_code == 200
    resp = merge(http, base_url, table, frame([7]), on="id",
                 when_not_matched_insert_all="true", branch="exp")
    assert resp.status_code == 200, resp.text
    assert [r["id"] for r in rows(http, base_url, table, "exp")] == [0, 1, 2, 3, 4, 7]
    assert [r["id"] for r in rows(http, base_url, table)] == [0, 1, 2, 3, 4]
    missing = merge(http, base_url, table, frame([7]), on="id",
                    when_not_matched_insert_all="true", branch="nope")
    assert_error(missing, 404, 22)


def test_merge_insert_into_a_declared_table_creates_it(http: requests.Session, base_url: str,
                                                       ns: str) -> None:
    ident = f"{ns}$later"
    assert post(http, base_url, ident, "declare", {}).status_code == 200
    resp = merge(http, base_url, ident, frame([1, 2]), on="id",
                 when_not_matched_insert_all="true")
    assert resp.status_code == 200, resp.text
    assert resp.json()["num_inserted_rows"] == 2
    assert [r["id"] for r in rows(http, base_url, ident)] == [1, 2]


# ---------------------------------------------------------------------------- update
def test_update_with_sql_values(http: requests.Session, base_url: str, table: str) -> None:
    resp = post(http, base_url, table, "update",
                {"updates": [["name", "'big'"], ["score", "score * 10"]], "predicate": "id > 2"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"version": 2, "updated_rows": 2, "rows_updated": 2}
    got = {r["id"]: (r["name"], r["score"]) for r in rows(http, base_url, table)}
    assert got[3] == ("big", 15.0) and got[4] == ("big", 20.0) and got[2] == ("n2", 1.0)
    # No predicate (LanceDB sends null): every row.
    resp = post(http, base_url, table, "update", {"updates": [["score", "0"]], "predicate": None})
    assert resp.json()["updated_rows"] == 5


def test_update_refusals(http: requests.Session, base_url: str, table: str) -> None:
    for body, status, code in [
        ({}, 400, 13),
        ({"updates": [["name"]]}, 400, 13),
        ({"updates": [["nope", "1"]]}, 404, 12),
        ({"updates": [["score", "score +"]]}, 400, 13),
        ({"updates": [["score", "1"]], "predicate": "id = 1) OR (true"}, 400, 13),
        ({"updates": [["score", "1"]], "branch": "nope"}, 404, 22),
        # Lance cannot plan these (found by a fuzz; they were 500s).
        ({"updates": [["score", "1"]], "predicate": "array_concat() IS NULL"}, 400, 13),
        ({"updates": [["name", "concat_ws(name)"]]}, 400, 13),
    ]:
        assert_error(post(http, base_url, table, "update", body), status, code)
    assert version(http, base_url, table) == 1


# --------------------------------------------------------------------------- columns
def test_add_alter_drop_columns(http: requests.Session, base_url: str, table: str) -> None:
    resp = post(http, base_url, table, "add_columns", {"new_columns": [
        {"name": "double", "expression": "id * 2"},
        {"name": "note", "data_type": {"type": "large_string"}},
    ]})
    assert resp.status_code == 200, resp.text
    first = resp.json()["version"]
    got = rows(http, base_url, table)
    assert [r["double"] for r in got] == [0, 2, 4, 6, 8]
    assert all(r["note"] is None for r in got)
    resp = post(http, base_url, table, "alter_columns", {"alterations": [
        {"path": "double", "rename": "twice", "data_type": {"type": "int32"}},
        {"path": "name", "nullable": True},
    ]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] > first
    schema = http.post(f"{base_url}/v1/table/{table}/describe", json={}).json()["schema"]
    twice = next(f for f in schema["fields"] if f["name"] == "twice")
    assert twice["type"] == {"type": "int32"}
    resp = post(http, base_url, table, "drop_columns", {"columns": ["twice", "note"]})
    assert resp.status_code == 200, resp.text
    assert set(rows(http, base_url, table)[0]) == {"id", "name", "score"}


def test_column_refusals(http: requests.Session, base_url: str, table: str) -> None:
    for action, body, status, code in [
        ("add_columns", {"new_columns": []}, 400, 13),
        ("add_columns", {"new_columns": [{"name": "x"}]}, 400, 13),
        ("add_columns", {"new_columns": [{"name": "name", "expression": "1"}]}, 400, 20),
        ("add_columns", {"new_columns": [{"name": "x", "expression": "nope + 1"}]}, 400, 13),
        # Found by a fuzz; they were 500s.
        ("add_columns", {"new_columns": [{"name": "x", "expression": "nope"}]}, 400, 13),
        ("add_columns", {"new_columns": [{"name": "x", "expression": "rtrim(name, 1, 2, 3)"}]},
         400, 13),
        ("add_columns", {"new_columns": [{"name": "x", "expression": "name BETWEEN [] AND 1"}]},
         400, 13),
        ("add_columns",
         {"new_columns": [{"name": "x", "expression": "CAST(0.5 AS DECIMAL(76, 0))"}]}, 400, 13),
        ("add_columns", {"new_columns": [{"name": "x", "data_type": {"type": "nope"}}]},
         400, 13),
        ("alter_columns", {"alterations": [{"path": "nope", "rename": "x"}]}, 404, 12),
        ("alter_columns", {"alterations": [{"path": "name"}]}, 400, 13),
        ("drop_columns", {"columns": ["nope"]}, 404, 12),
        ("drop_columns", {}, 400, 13),
    ]:
        assert_error(post(http, base_url, table, action, body), status, code)
    assert version(http, base_url, table) == 1


@pytest.mark.parametrize(("action", "body", "status", "code", "says"), [
    # The expression is valid SQL; it fails on the rows.
    ("update", {"updates": [["id", "id / 0"]]}, 400, 13, "zero"),
    ("add_columns", {"new_columns": [{"name": "a.b", "expression": "id + 1"}]}, 400, 13, "."),
    ("add_columns", {"new_columns": [{"name": "a.b", "data_type": {"type": "int64"}}]},
     400, 13, "."),
    ("alter_columns", {"alterations": [{"path": "score", "rename": "id"}]}, 400, 20, "'id'"),
    ("alter_columns", {"alterations": [{"path": "score", "rename": "a.b"}]}, 400, 13, "."),
])
def test_schema_and_expression_refusals_are_input_errors(
        http: requests.Session, base_url: str, table: str, action: str, body: Any,
        status: int, code: int, says: str) -> None:
    """Inputs that reached Lance and came back as a 500: each is the caller's to fix."""
    error = assert_error(post(http, base_url, table, action, body), status, code)
    assert says in error["detail"], error
    assert version(http, base_url, table) == 1
    assert set(rows(http, base_url, table)[0]) == {"id", "name", "score"}


def test_schema_metadata_update_is_a_bare_map(http: requests.Session, base_url: str,
                                              table: str) -> None:
    url = f"{base_url}/v1/table/{table}/schema_metadata/update"
    resp = http.post(url, json={"owner": "ana", "tier": "gold"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"owner": "ana", "tier": "gold"}
    assert resp.headers["x-nsframe-version"] == "2"
    resp = http.post(url, json={"tier": None, "note": "x"})
    assert resp.json() == {"owner": "ana", "note": "x"}
    described = http.post(f"{base_url}/v1/table/{table}/describe", json={}).json()
    assert described["schema"]["metadata"] == {"owner": "ana", "note": "x"}
    assert_error(http.post(url, json=["not", "a", "map"]), 400, 13)
    assert_error(http.post(url, json={"n": 1}), 400, 13)
