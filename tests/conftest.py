"""One real server for the session, a fresh namespace per test."""

from __future__ import annotations

import io
import os
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("lance")) as running:
        yield running


@pytest.fixture(scope="session")
def base_url(server: RunningServer) -> str:
    return server.url


@pytest.fixture(scope="session")
def root(server: RunningServer) -> Path:
    return Path(server.config.root)


@pytest.fixture(scope="session")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture
def ns(base_url: str, http: requests.Session) -> str:
    """A namespace of its own for each test."""
    name = f"t{uuid.uuid4().hex[:12]}"
    resp = http.post(f"{base_url}/v1/namespace/{name}/create", json={})
    assert resp.status_code == 200, resp.text
    return name


def ipc_stream(data: pa.Table | pa.RecordBatch | dict[str, Any],
               schema: pa.Schema | None = None) -> bytes:
    """Encode ``data`` as an Arrow IPC stream body."""
    table = data if isinstance(data, pa.Table) else pa.table(data, schema=schema) \
        if isinstance(data, dict) else pa.Table.from_batches([data])
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def table_location(http: requests.Session, base_url: str, ident: str) -> Path:
    """Where the table's Lance dataset lives (describe's ``location``), on a local root."""
    resp = http.post(f"{base_url}/v1/table/{ident}/describe", json={})
    assert resp.status_code == 200, resp.text
    return Path(resp.json()["location"])


def data_folders(root: Path) -> set[str]:
    """The table data folders under a local root."""
    tables = root / "tables"
    return set(os.listdir(tables)) if tables.is_dir() else set()


def read_ipc_file(content: bytes) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(content)).read_all()


def assert_error(resp: requests.Response, status: int, code: int | None = None) -> dict[str, Any]:
    """Check the contract's error body and return it."""
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()
    assert body["status"] == status
    assert body["type"].startswith("/errors/")
    assert body["title"]
    assert body["detail"]
    sent_path = urllib.parse.unquote(urllib.parse.urlsplit(str(resp.request.url)).path)
    assert urllib.parse.unquote(body["instance"]).rstrip("/") == sent_path.rstrip("/"), body
    assert body["error"] == body["detail"]
    if code is not None:
        assert body["code"] == code, body
    assert "Traceback" not in resp.text and "/home/" not in resp.text and "/tmp/" not in resp.text
    return body


@pytest.fixture
def conn(base_url: str) -> Iterator[Any]:
    """An nsframe client connection to the session server."""
    import nsframe

    with nsframe.connect(base_url) as connection:
        yield connection
