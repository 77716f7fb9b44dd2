"""What the client says when it cannot know a write's outcome, and how long it waits
(issue point 7).

Before: an insert whose answer timed out raised "the server is busy or unreachable", and
one whose connection dropped after the commit "Check the URL and that the server is
running", though the rows were on the server both times; and `Retry-After: 3600` was
waited for up to 30 s per retry even with timeout=3.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pyarrow as pa
import pytest

import nsframe
from nsframe import Client
from nsframe.exceptions import (
    RequestTimeoutError,
    ServiceUnavailableError,
    TransportError,
)
from tests.client.test_http import Scripted, error, ok_json


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_write_whose_connection_drops_may_have_been_committed(
    scripted: Callable[..., Scripted],
) -> None:
    server = scripted([ok_json({"version": 2, "num_inserted_rows": 1})], drop_first=1)
    client = Client(server.url, retries=3)
    with pytest.raises(TransportError) as info:
        client.insert("db$t", iter([b"rows"]))
    message = str(info.value)
    assert "may have been committed" in message and "tbl.version" in message
    assert "Check the URL" not in message
    assert len(server.requests) == 1  # the body arrived; a write is never sent twice


def test_a_write_without_an_answer_may_have_been_committed() -> None:
    # Listening but never answering: the request is sent, no answer comes.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        client = Client(f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=0.5)
        with pytest.raises(RequestTimeoutError) as info:
            client.delete("db$t", "id = 1")
        assert "may have been committed" in str(info.value)
        assert "busy or unreachable" not in str(info.value)
        # A read that times out did nothing, and says so as before.
        with pytest.raises(RequestTimeoutError, match="busy or unreachable"):
            client.describe_namespace("db")


def test_a_write_that_could_not_connect_did_nothing(closed_port: int) -> None:
    client = Client(f"http://127.0.0.1:{closed_port}", retries=0)
    with pytest.raises(TransportError) as info:
        client.create_namespace("db")
    assert "server is running" in str(info.value)
    assert "may have been committed" not in str(info.value)


def test_retry_after_never_outlasts_the_calls_timeout(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(503, 17, "busy", **{"Retry-After": "3600"}),
                       ok_json({"properties": {}})])
    client = Client(server.url, timeout=3, retries=1)
    started = time.monotonic()
    with pytest.raises(ServiceUnavailableError):
        client.describe_namespace("db")
    assert time.monotonic() - started < 1.0
    assert len(server.requests) == 1
    # A wait that fits in the timeout is still honoured.
    server = scripted([error(503, 17, "busy", **{"Retry-After": "1"}),
                       ok_json({"properties": {}})])
    client = Client(server.url, timeout=3, retries=1)
    started = time.monotonic()
    assert client.describe_namespace("db") == {"properties": {}}
    assert 0.9 < time.monotonic() - started < 2.5


def test_a_read_retries_once_on_a_reset_connection_even_without_retries(
    scripted: Callable[..., Scripted],
) -> None:
    server = scripted([ok_json({"namespaces": ["a"], "page_token": None})], drop_first=1)
    conn = nsframe.connect(server.url, retries=0)
    assert conn.namespaces() == ["a"]
    assert len(server.requests) == 2
    # Once only: a second reset is an error.
    server = scripted([error(404, 1, "gone")], drop_first=2)
    client = Client(server.url, retries=0)
    with pytest.raises(TransportError):
        client.describe_namespace("db")
    assert len(server.requests) == 2


def test_the_rows_of_an_unknown_outcome_insert_reached_the_server(
    scripted: Callable[..., Scripted],
) -> None:
    server = scripted([ok_json({})], drop_first=1)
    conn = nsframe.connect(server.url)
    with pytest.raises(TransportError, match="may have been committed"):
        conn.client.insert("db$t", iter([_stream(pa.table({"id": [1, 2]}))]))
    got = pa.ipc.open_stream(server.requests[0]["body"]).read_all()
    assert got.column("id").to_pylist() == [1, 2]


def _stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())
