"""What a newcomer meets first: messages in Python's words, reprs that need no server,
typos that write nothing, vectors of the wrong size, tags and branches as objects."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import (
    ConnectionClosedError,
    InvalidInputError,
    TagAlreadyExistsError,
    VectorDimensionError,
)
from nsframe.server import serve_in_thread


@pytest.fixture
def tbl(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    return conn.create_table(f"{ns}$items", {
        "id": [1, 2, 3],
        "vector": [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]],
    })


# ---------------------------------------------------------------------- 2. closed
def test_a_closed_connection_says_it_is_closed(tmp_path: Path) -> None:
    conn = nsframe.connect(tmp_path / "data")
    table = conn.create_table("t", {"id": [1]})
    conn.close()
    started = time.perf_counter()
    with pytest.raises(ConnectionClosedError, match="connection is closed"):
        table.count_rows()
    assert time.perf_counter() - started < 0.5  # no retries against a stopped server
    assert isinstance(ConnectionClosedError("x"), nsframe.TransportError)


# ---------------------------------------------------------------------- 3. messages
def test_a_duplicate_tag_names_the_python_method(tbl: nsframe.Table) -> None:
    tbl.tags.create("first", 1)
    with pytest.raises(TagAlreadyExistsError) as info:
        tbl.tags.create("first", 1)
    message = str(info.value)
    assert "tbl.tags.update(tag, version)" in message and "tags/update" not in message
    assert message.startswith("Table ") and not message[:3].isdigit()
    assert info.value.status == 409 and info.value.method == "POST"
    assert "tags/update" in info.value.detail


def test_two_vector_columns_name_the_column_argument(conn: nsframe.Connection,
                                                     ns: str) -> None:
    two = conn.create_table(f"{ns}$two", {"a": [[0.1, 0.2]], "b": [[0.3, 0.4]]})
    with pytest.raises(InvalidInputError) as info:
        two.search([0.1, 0.2]).to_arrow()
    assert "column=" in str(info.value) and "'vector_column'" not in str(info.value)
    assert two.search([0.1, 0.2], column="b").to_arrow().num_rows == 1


def test_error_repr_has_status_method_and_url(tbl: nsframe.Table) -> None:
    with pytest.raises(InvalidInputError) as info:
        tbl.search().where("id >>>> 3").to_arrow()
    error = info.value
    assert not str(error).startswith(("400", "Malformed"))
    assert "/query" in repr(error) and "status=400" in repr(error) and "'POST'" in repr(error)


# ---------------------------------------------------------------------- 4. vectors
@pytest.mark.parametrize("data", [
    pytest.param(lambda: pd.DataFrame({"id": [4, 5], "vector": [np.ones(4, "float32"),
                                                               np.ones(3, "float32")]}),
                 id="pandas-ragged"),
    pytest.param(lambda: pd.DataFrame({"id": [4, 5], "vector": [np.ones(3, "float32")] * 2}),
                 id="pandas-short"),
    pytest.param(lambda: {"id": [4, 5], "vector": [[1.0] * 4, [1.0] * 3]}, id="dict-ragged"),
    pytest.param(lambda: [{"id": 4, "vector": [1.0] * 3}], id="rows-short"),
])
def test_a_wrong_size_vector_names_column_table_sizes_and_row(tbl: nsframe.Table,
                                                              data: object) -> None:
    with pytest.raises(VectorDimensionError) as info:
        tbl.insert(data() if callable(data) else data)
    error = info.value
    assert (error.column, error.table, error.expected, error.found) == \
        ("vector", tbl.id, 4, 3)
    assert error.row in (0, 1)
    assert f"row {error.row}" in str(error) and tbl.id in str(error)
    assert isinstance(error, ValueError)
    assert tbl.count_rows() == 3  # nothing was sent


# ---------------------------------------------------------------------- 5. connect
@pytest.mark.parametrize("url, suggestion", [
    ("htp://127.0.0.1:2333", "did you mean 'http://127.0.0.1:2333'"),
    ("hhtps://example.org", "did you mean 'https://example.org'"),
    ("db://mydb", "'./mydb'"),
    ("127.0.0.1:2333", "did you mean 'http://127.0.0.1:2333'"),
])
def test_connect_refuses_other_schemes_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, suggestion: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="(?i)" + suggestion.replace(".", r"\.")):
        nsframe.connect(url)
    assert list(tmp_path.iterdir()) == []


def test_connect_names_the_server_extra_when_it_is_missing(tmp_path: Path) -> None:
    # A child interpreter where the server's web framework cannot be imported.
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "import nsframe\n"
        "try:\n"
        f"    nsframe.connect({str(tmp_path / 'data')!r})\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "pip install 'nsframe[server]'" in out.stdout, out.stderr
    assert "starlette" in out.stdout


# ---------------------------------------------------------------------- 13. reprs
def test_reprs_need_no_server(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path / "data") as running:
        conn = nsframe.connect(running.url, retries=3, timeout=5)
        conn.create_namespace("lab")
        table = conn.create_table("lab$items", {"id": [1]})
    # The server is stopped now: a repr must still answer at once.
    started = time.perf_counter()
    texts = [repr(table), repr(table.at(version=1)), repr(conn.namespace("lab")),
             repr(conn), repr(table.search([1.0]).where("id > 0")), repr(table.tags),
             repr(table.branches)]
    assert time.perf_counter() - started < 0.5
    assert texts[0] == "Table('lab$items', main)"
    assert texts[2] == "Namespace('lab')"


# ---------------------------------------------------------------------- 9, 13: objects
def test_tags_and_branches_are_objects_as_in_lancedb(tbl: nsframe.Table) -> None:
    second = tbl.insert({"id": [4], "vector": [[0.0] * 4]}).version
    assert second == 2
    tag = tbl.tags.create("first", 1)
    assert isinstance(tag, nsframe.Tag) and tag.version == 1
    assert tbl.tags.get_version("first") == 1
    assert tbl.tags.update("first", 2).version == 2
    assert list(tbl.tags.list()) == ["first"] and tbl.tags() == tbl.tags.list()
    tbl.tags.delete("first")
    assert tbl.tags.list() == {}
    dev = tbl.branches.create("dev", from_version=1)
    assert isinstance(dev, nsframe.Table) and dev.branch_name == "dev"
    assert dev.count_rows() == 3
    assert list(tbl.branches.list()) == ["dev"] and tbl.branches.get_version("dev") >= 1
    tbl.branches.delete("dev")
    assert tbl.branches() == {}


def test_versions_display_as_a_history(tbl: nsframe.Table) -> None:
    tbl.insert({"id": [4], "vector": [[0.0] * 4]})
    tbl.tags.create("raw", 1)
    history = tbl.versions()
    assert [v.version for v in history] == [1, 2]  # still a list of Version
    assert history[0].tags == ("raw",) and history[1].operation == "Append"
    text = repr(history)
    assert text.splitlines()[0].split() == ["version", "timestamp", "operation", "details",
                                            "rows", "tags"]
    assert len(text.splitlines()) == 4 and "raw" in text.splitlines()[1]
    frame = tbl.history()
    assert list(frame.columns) == ["version", "timestamp", "operation", "details", "rows",
                                   "tags"]
    assert frame["rows"].tolist() == [3, 4]
    assert list(frame["tags"][0]) == ["raw"]
    assert "<table>" in history._repr_html_()


def test_create_methods_return_what_they_made(tbl: nsframe.Table,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    index = tbl.create_scalar_index("id", progress=True)
    assert isinstance(index, nsframe.IndexInfo)
    assert (index.name, index.columns, index.index_type) == ("id_idx", ("id",), "BTREE")
    assert index.name in [i.name for i in tbl.list_indices()]
    # progress=True shows the time the build has taken (index builds report nothing else).
    assert "create_scalar_index BTREE" in capsys.readouterr().err


def test_elapsed_shows_nothing_for_quick_calls_unless_asked(
        tbl: nsframe.Table, capsys: pytest.CaptureFixture[str]) -> None:
    tbl.create_scalar_index("id")
    assert capsys.readouterr().err == ""


def test_arrow_input_keeps_its_types(tbl: nsframe.Table) -> None:
    # Arrow data is sent as it is: no vector check on the client, the server's says it.
    data = pa.table({"id": [9], "vector": pa.FixedSizeListArray.from_arrays(
        pa.array([1.0, 2.0, 3.0], pa.float32()), 3)})
    with pytest.raises(nsframe.exceptions.SchemaMismatchError):
        tbl.insert(data)


# ------------------------------------------------------------- advice that works
@pytest.fixture
def named(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    return conn.create_table(f"{ns}$named", {"id": [1, 2], "name": ["a", "b"]})


@pytest.mark.parametrize("read", [
    pytest.param(lambda t: t.search().select(["nmae"]).to_pandas(), id="select"),
    pytest.param(lambda t: t.to_pandas(columns=["nmae"]), id="to_pandas-columns"),
    pytest.param(lambda t: t.search().where("nmae = 'a'").to_pandas(), id="where"),
    pytest.param(lambda t: t.search().select({"x": "nmae || 'x'"}).to_pandas(), id="alias"),
    pytest.param(lambda t: t.count_rows("nmae = 'a'"), id="count_rows"),
    pytest.param(lambda t: t.create_scalar_index("nmae"), id="index"),
])
def test_every_missing_column_gets_the_same_suggestion_and_the_columns(
    named: nsframe.Table, read: Any
) -> None:
    with pytest.raises(nsframe.exceptions.APIError) as info:
        read(named)
    assert "The column nmae is not in the table. Did you mean 'name'? " \
           "The table's columns: id, name." in str(info.value)


def test_inserting_an_extra_column_advises_what_works(named: nsframe.Table) -> None:
    with pytest.raises(nsframe.exceptions.SchemaMismatchError) as info:
        named.add(pd.DataFrame({"id": [3], "name": ["c"], "extra": [1]}))
    message = str(info.value)
    assert "overwrite" not in message  # it would replace the table, not insert the rows
    assert "column 'extra' is not in the table" in message
    assert "tbl.add_columns([pa.field(name, type)])" in message
    named.add_columns([pa.field("extra", pa.int64())])  # the advice, followed, works
    named.add(pd.DataFrame({"id": [3], "name": ["c"], "extra": [1]}))
    assert named.count_rows() == 3


def test_history_says_what_each_operation_was_given(tbl: nsframe.Table) -> None:
    tbl.delete("id = 1")
    tbl.restore(1)
    tbl.add({"id": [4], "vector": [[0.0] * 4]})
    frame = tbl.history()
    assert frame["details"].tolist() == ["", "where (id = 1)", "from version 1", ""]
    assert not frame["details"].isna().any()
    assert "from version 1" in repr(tbl.versions())
