"""`connect()`, `Connection` and `Namespace` against the real server, remote and embedded."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import requests

import nsframe
from nsframe.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TransportError,
    UnauthorizedError,
)


def test_namespaces_create_list_describe_drop(conn: nsframe.Connection, ns: str) -> None:
    child = conn.create_namespace(f"{ns}$child", properties={"owner": "ana"})
    assert isinstance(child, nsframe.Namespace)
    assert child.properties() == {"owner": "ana"}
    assert child.exists()
    assert conn.namespaces(ns) == [f"{ns}$child"]
    assert ns in conn.namespaces()
    with pytest.raises(NamespaceAlreadyExistsError) as info:
        conn.create_namespace(f"{ns}$child")
    assert "exist_ok=True" in str(info.value) and "mode='overwrite'" in str(info.value)
    assert conn.create_namespace(f"{ns}$child", exist_ok=True).properties() == {"owner": "ana"}
    with pytest.warns(DeprecationWarning, match="exist_ok=True"):
        conn.create_namespace(f"{ns}$child", mode="exist_ok")
    conn.drop_namespace(f"{ns}$child")
    assert not conn.namespace(f"{ns}$child").exists()
    assert conn.namespaces(ns) == []


def test_drop_namespace_modes_and_behaviors(conn: nsframe.Connection, ns: str) -> None:
    with pytest.raises(NamespaceNotFoundError) as info:
        conn.drop_namespace(f"{ns}$ghost")
    assert info.value.status == 400
    conn.drop_namespace(f"{ns}$ghost", mode="skip")  # no error
    conn.create_table(f"{ns}$t", {"id": [1]})
    with pytest.raises(NamespaceNotEmptyError):
        conn.drop_namespace(ns)
    assert conn.table(f"{ns}$t").count_rows() == 1  # nothing was dropped
    conn.drop_namespace(ns, behavior="cascade")
    assert not conn.namespace(ns).exists()


def test_namespace_proxy(conn: nsframe.Connection, ns: str) -> None:
    space = conn.namespace(ns)
    assert space.id == ns and space.name == ns
    sub = space.create_namespace("sub")
    assert sub.id == f"{ns}$sub"
    conn.create_table(f"{ns}$sub$t", {"x": [1.5]})
    assert sub.table_names() == ["t"]
    assert sub["t"].count_rows() == 1
    assert sub.table("t") == conn.table(f"{ns}$sub$t")
    assert repr(sub) == f"Namespace('{ns}$sub')"  # no request: see test_reprs_need_no_server
    assert "<code>t</code>" in sub._repr_html_()
    assert conn.namespace("$").id == "$" and conn.namespace(()).parts == ()


def test_listings_follow_page_tokens(conn: nsframe.Connection, ns: str) -> None:
    names = [f"t{i}" for i in range(7)]
    for name in names:
        conn.create_table(f"{ns}${name}", {"id": [1]})
        conn.create_namespace(f"{ns}$n{name}")
    conn.client.page_size = 2  # the server must hand out page tokens
    assert conn.table_names(ns) == [f"{ns}${n}" for n in names]
    assert conn.namespaces(ns) == [f"{ns}$n{n}" for n in names]
    assert set(conn.table_names()) >= {f"{ns}${n}" for n in names}


def test_tables_as_a_dataframe(conn: nsframe.Connection, ns: str) -> None:
    conn.create_table(f"{ns}$b", {"id": [1]})
    conn.create_table(f"{ns}$a", {"id": [1]})
    frame = conn.tables(ns)
    assert isinstance(frame, pd.DataFrame)
    assert frame.to_dict("records") == [
        {"id": f"{ns}$a", "namespace": ns, "name": "a"},
        {"id": f"{ns}$b", "namespace": ns, "name": "b"},
    ]
    everything = conn.tables()
    assert {f"{ns}$a", f"{ns}$b"} <= set(everything["id"])


def test_table_handles_are_lazy(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn[f"{ns}$later"]  # nothing exists yet, and nothing is asked
    assert tbl.id == f"{ns}$later" and tbl.namespace == (ns,) and tbl.name == "later"
    with pytest.raises(TableNotFoundError):
        conn.open_table(f"{ns}$later")
    conn.create_table(f"{ns}$later", {"id": [1, 2]})
    assert tbl.count_rows() == 2
    assert conn.open_table(f"{ns}$later") == tbl


def test_create_table_modes(conn: nsframe.Connection, ns: str) -> None:
    name = f"{ns}$m"
    conn.create_table(name, {"id": [1, 2]})
    with pytest.raises(TableAlreadyExistsError) as info:
        conn.create_table(name, {"id": [3]})
    # In the client's words (LanceDB's create_table arguments), not the REST create modes.
    assert "pass exist_ok=True to open it, or mode='overwrite'" in str(info.value)
    assert "use mode exist_ok" in info.value.detail  # what the server said is kept
    same = conn.create_table(name, {"id": [3]}, exist_ok=True)
    assert same.count_rows() == 2
    assert conn.create_table(name, exist_ok=True).count_rows() == 2  # declared: no data
    replaced = conn.create_table(name, {"id": [7, 8, 9]}, mode="overwrite")
    assert sorted(replaced.to_arrow().column("id").to_pylist()) == [7, 8, 9]
    with pytest.warns(DeprecationWarning, match="exist_ok=True"):
        conn.create_table(name, {"id": [3]}, mode="exist_ok")
    with pytest.raises(ValueError, match="pass one of them"):
        conn.create_table(name, {"id": [3]}, mode="overwrite", exist_ok=True)
    with pytest.raises(ValueError, match="mode must be 'create' or 'overwrite'"):
        conn.create_table(name, {"id": [3]}, mode="append")


def test_create_table_refuses_a_dotted_id_when_the_namespace_exists(
        conn: nsframe.Connection, ns: str) -> None:
    with pytest.raises(ValueError, match=rf"Did you mean '{ns}\$items2'\?"):
        conn.create_table(f"{ns}.items2", {"id": [1]})
    with pytest.raises(ValueError, match=rf"Did you mean '{ns}\$sub\$t'\?"):
        conn.create_namespace(f"{ns}$sub")
        conn.create_table(f"{ns}.sub.t", {"id": [1]})
    assert not any("." in name for name in conn.table_names())
    # Without a namespace of that name, a dot is just part of a root table's name.
    odd = f"x{ns}.csv"
    conn.create_table(odd, {"id": [1]})
    assert odd in conn.table_names()
    conn.drop_table(odd)


def test_create_table_from_schema_or_declared(conn: nsframe.Connection, ns: str) -> None:
    schema = pa.schema([("id", pa.int32()), ("vector", pa.list_(pa.float32(), 3))])
    empty = conn.create_table(f"{ns}$s", schema=schema)
    assert empty.schema == schema and empty.count_rows() == 0
    declared = conn.create_table(f"{ns}$d")
    assert declared.describe().is_only_declared
    assert "declared" in declared._repr_html_()
    declared.insert(pa.table({"id": [1, 2]}))  # the first insert creates it
    assert declared.count_rows() == 2


def test_create_table_from_pandas_with_schema_cast(conn: nsframe.Connection, ns: str) -> None:
    frame = pd.DataFrame({"id": [1, 2], "score": [0.5, None]})
    schema = pa.schema([("id", pa.int32()), ("score", pa.float32())])
    tbl = conn.create_table(f"{ns}$p", frame, schema=schema)
    assert tbl.schema == schema
    assert tbl.to_pandas()["score"].isna().tolist() == [False, True]


def test_drop_table(conn: nsframe.Connection, ns: str) -> None:
    conn.create_table(f"{ns}$gone", {"id": [1]})
    conn.drop_table(f"{ns}$gone")
    assert conn.table_names(ns) == []
    with pytest.raises(TableNotFoundError):
        conn.drop_table(f"{ns}$gone")


def test_embedded_connect_serves_a_local_folder(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with nsframe.connect(root) as conn:
        assert conn.local_root == str(root.resolve())
        assert conn.url.startswith("http://127.0.0.1:")
        conn.create_namespace("db")
        conn.create_table("db$items", {"id": [1, 2, 3]})
        url = conn.url
        # The embedded server wants its own random token: a bare request is refused.
        assert requests.post(f"{url}/v1/namespace/db/describe", json={}).status_code == 401
    assert conn.closed
    with pytest.raises(TransportError):
        conn.namespaces()
    with pytest.raises(requests.ConnectionError):
        requests.post(f"{url}/v1/namespace/db/describe", json={}, timeout=2)
    # The data stays in the folder for the next connection.
    with nsframe.connect(str(root)) as again:
        assert again.table("db$items").count_rows() == 3


def test_connect_without_a_url_serves_nsframe_data_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NSFRAME_URL", "NSFRAME_API_KEY", "NSFRAME_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    with nsframe.connect() as conn:
        assert conn.local_root == str(tmp_path / "nsframe-data")
        assert conn.url.startswith("http://127.0.0.1:")
        conn.create_namespace("db")
        conn.create_table("db$items", {"id": [1, 2]})
    assert conn.closed
    assert (tmp_path / "nsframe-data").is_dir()
    # The environment still wins over the default folder.
    monkeypatch.setenv("NSFRAME_URL", str(tmp_path / "elsewhere"))
    with nsframe.connect() as other:
        assert other.local_root == str(tmp_path / "elsewhere")
        assert other.table_names() == []
    with nsframe.connect("nsframe-data") as again:  # a relative folder is the same one
        assert again.table("db$items").count_rows() == 2


def test_connect_to_a_file_url_serves_that_folder(tmp_path: Path) -> None:
    root = tmp_path / "via file url"
    assert root.as_uri().endswith("/via%20file%20url")
    with nsframe.connect(root.as_uri()) as conn:
        assert conn.local_root == str(root)
        assert root.is_dir()  # made when missing
        conn.create_namespace("db")
        conn.create_table("db$items", {"id": [1, 2, 3]})
    assert conn.closed
    with nsframe.connect(root) as same:  # the same folder as a plain path
        assert same.table("db$items").count_rows() == 3
    with nsframe.connect(f"file://{root}") as unquoted:  # spaces written as they are
        assert unquoted.local_root == str(root)


def test_embedded_connect_rejects_a_wrong_key(tmp_path: Path) -> None:
    with nsframe.connect(tmp_path) as conn:
        intruder = nsframe.connect(conn.url, token="guess", retries=0)
        with pytest.raises(UnauthorizedError):
            intruder.namespaces()


def test_connect_reads_the_environment(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSFRAME_URL", base_url)
    monkeypatch.setenv("NSFRAME_API_KEY", "env-key-value")
    monkeypatch.setenv("NSFRAME_TOKEN", "env-token-value")
    conn = nsframe.connect()
    assert conn.url == base_url
    assert conn.local_root is None
    text = repr(conn)
    assert "env-key-value" not in text and "env-token-value" not in text
    assert "api_key=***" in text and "token=***" in text
    conn.close()


def test_default_connection(conn: nsframe.Connection) -> None:
    nsframe.set_default(conn)
    try:
        assert nsframe.get_default() is conn
    finally:
        nsframe.set_default(None)
    with pytest.raises(RuntimeError, match="set_default"):
        nsframe.get_default()
    with pytest.raises(TypeError):
        nsframe.set_default("http://x")  # type: ignore[arg-type]


def test_connection_display(conn: nsframe.Connection, base_url: str, ns: str) -> None:
    assert repr(conn) == f"Connection(Client({base_url!r}))"
    page = conn._repr_html_()
    assert f"<code>{ns}</code>" in page and "namespaces" in page


def test_extended_deployment_endpoints_address_the_selected_database(tmp_path: Path) -> None:
    from nsframe.server import serve_in_thread

    roots = {"sales": tmp_path / "sales"}
    with serve_in_thread(tmp_path / "default", databases=roots) as running, \
            nsframe.connect(running.url, database="sales") as sales, \
            nsframe.connect(running.url) as default:
        sales.create_namespace("ledger")
        made = sales.create_database_table("ledger$q1", {"id": [1, 2, 3]})
        assert made.count_rows() == 3
        declared = sales.create_database_table("ledger$q2")
        assert declared.describe().is_only_declared
        empty = sales.create_database_table("top", schema=pa.schema([("id", pa.int64())]))
        assert empty.count_rows() == 0
        with pytest.raises(TableAlreadyExistsError):
            sales.create_database_table("ledger$q1", {"id": [4]})
        sales.client.page_size = 1  # one table per page
        assert sales.database_table_names() == ["ledger$q1", "ledger$q2", "top"]
        assert sales.database_table_names() == sales.table_names()
        assert default.database_table_names() == []
