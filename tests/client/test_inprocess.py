"""The embedded default answers in process (`nsframe._client.inprocess`): the same server
code from the route down, so every answer is the one HTTP would give."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import requests

import nsframe
from nsframe.exceptions import InvalidInputError, TableNotFoundError
from nsframe.transport import EmbeddedTransport
from tests.support import text_vector_rows


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[nsframe.Connection]:
    with nsframe.connect(tmp_path / "data") as conn:
        conn.create_namespace("db")
        yield conn


def test_connect_to_a_folder_answers_in_process(embedded: nsframe.Connection) -> None:
    assert isinstance(embedded.client.transport, EmbeddedTransport)
    tbl = embedded.create_table("db$t", text_vector_rows(100, dim=16))
    tbl.insert(text_vector_rows(50, start=100, dim=16))
    assert tbl.count_rows() == 150
    found = tbl.search(np.zeros(16, dtype=np.float32)).limit(5).to_arrow()
    assert found.num_rows == 5 and "_distance" in found.column_names
    assert tbl.to_arrow(filter="id >= 140").column("id").to_pylist() == list(range(140, 150))
    # The socket still serves other processes, with the same data.
    with nsframe.connect(embedded.url, token=embedded.client.headers[
            "Authorization"].split()[1]) as remote:
        assert remote.table("db$t").count_rows() == 150


def test_a_large_answer_streams_and_matches_http(embedded: nsframe.Connection) -> None:
    # ~8 MB: a streamed answer
    tbl = embedded.create_table("db$big", text_vector_rows(60_000, dim=16))
    token = embedded.client.headers["Authorization"].split()[1]
    with nsframe.connect(embedded.url, token=token) as remote:
        over_http = remote.table("db$big").to_arrow(page_rows=25_000)
    assert tbl.to_arrow(page_rows=25_000).equals(over_http)
    # An answer abandoned half-way leaves nothing behind for the next call.
    resp = embedded.client.request("POST", "/v1/table/{id}/query", "db$big",
                                   idempotent=True, json={"vector": {}, "k": 0}, stream=True)
    assert resp.read(100)
    resp.close()
    assert tbl.count_rows() == 60_000


def test_errors_are_the_servers(embedded: nsframe.Connection) -> None:
    with pytest.raises(TableNotFoundError):
        embedded.table("db$missing").count_rows()
    tbl = embedded.create_table("db$t", text_vector_rows(10, dim=16))
    with pytest.raises(InvalidInputError):
        tbl.search().where("no_such_column > 1").to_arrow()


def test_bad_data_on_the_client_side_writes_nothing(embedded: nsframe.Connection) -> None:
    tbl = embedded.create_table("db$t", text_vector_rows(10, dim=16))

    def batches() -> Iterator[pa.RecordBatch]:
        yield text_vector_rows(5, start=10, dim=16).to_batches()[0]
        raise RuntimeError("the source failed")

    reader = pa.RecordBatchReader.from_batches(text_vector_rows(1, dim=16).schema, batches())
    with pytest.raises(RuntimeError, match="the source failed"):
        tbl.insert(reader)
    assert tbl.count_rows() == 10


def test_threads_each_drive_their_own_calls(embedded: nsframe.Connection) -> None:
    tbl = embedded.create_table("db$t", text_vector_rows(1000, dim=16))
    errors: list[BaseException] = []
    counts: list[int] = []

    def work(i: int) -> None:
        try:
            for _ in range(10):
                counts.append(tbl.search(np.full(16, i, dtype=np.float32)).limit(3)
                              .to_arrow().num_rows)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and counts == [3] * 80


def test_a_table_keeps_its_connection_alive(tmp_path: Path) -> None:
    # No name holds the connection, only the table: its embedded server keeps serving.
    tbl = nsframe.connect(tmp_path).create_table("t", pa.table({"id": [1, 2, 3]}))
    gc.collect()
    tbl.insert(pa.table({"id": [4]}))
    assert tbl.count_rows() == 4
    client = weakref.ref(tbl._client)
    url = tbl._client.base_url
    del tbl
    gc.collect()
    # Once nothing uses it, it is collected, and its server stops.
    assert client() is None
    with pytest.raises(requests.ConnectionError):
        requests.post(f"{url}/v1/namespace/$/list", timeout=2)


def test_a_closed_connection_fails_like_a_stopped_server(tmp_path: Path) -> None:
    conn = nsframe.connect(tmp_path, retries=0)
    conn.close()
    with pytest.raises(nsframe.exceptions.TransportError):
        conn.namespaces()
    with pytest.raises(requests.ConnectionError):
        requests.post(f"{conn.url}/v1/namespace/$/list", timeout=2)


def test_calls_from_inside_a_running_event_loop(embedded: nsframe.Connection) -> None:
    # A Jupyter kernel runs each cell inside its own running event loop.
    import asyncio

    tbl = embedded.create_table("db$t", text_vector_rows(10, dim=16))

    async def cell() -> int:
        tbl.insert(text_vector_rows(5, start=10, dim=16))
        return tbl.count_rows() + tbl.search(np.zeros(16, dtype=np.float32)).limit(3) \
            .to_arrow().num_rows

    assert asyncio.run(cell()) == 18


def test_ctrl_c_in_a_handler_reaches_the_caller(embedded: nsframe.Connection,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from nsframe.server._storage.catalog import Catalog

    tbl = embedded.create_table("db$t", text_vector_rows(10, dim=16))
    resolve = Catalog.require_table

    def interrupted(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(Catalog, "require_table", resolve)  # once
        raise KeyboardInterrupt

    monkeypatch.setattr(Catalog, "require_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tbl.count_rows()  # the handler runs on this thread: not a 500, the interrupt
    assert tbl.count_rows() == 10


def test_the_app_sees_what_it_sees_over_http(tmp_path: Path) -> None:
    """A recording ASGI app behind uvicorn and behind `EmbeddedTransport` gets the same
    request."""
    import socket
    import time
    from typing import Any

    import uvicorn

    from nsframe import Client

    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]
                   if k not in (b"x-request-id", b"connection")}
        seen.append({"method": scope["method"], "path": scope["path"],
                     "raw_path": scope["raw_path"], "query": scope["query_string"],
                     "headers": headers, "body": body})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        over_http = Client(url, api_key="k", context={"who": "me"})
        in_process = Client(url, api_key="k", context={"who": "me"},
                            transport=EmbeddedTransport(app))

        def chunks() -> Iterator[bytes]:
            yield b"one "
            yield b"two"

        for client in (over_http, in_process):
            client.call_json("POST", "/v1/table/{id}/count_rows", "a$b c/d", idempotent=True,
                             json={"predicate": "x > 1"}, params={"mode": "a b"})
            client.call_json("GET", "/v1/namespace/{id}/list", "a", idempotent=True)
            client.call_json("POST", "/v1/table/{id}/insert", "t", idempotent=False,
                             data=chunks(), content_type="application/vnd.apache.arrow.stream")
        assert seen[:3] == seen[3:]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
