"""The HTTP layer: transport failures, retries, error mapping, headers, URL quoting.

Retry and header tests use a tiny real HTTP server in a thread that answers what each
test scripts (503 with Retry-After, a dropped connection, a non-JSON body...).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import nsframe
from nsframe import Client
from nsframe._client.transport import retry_after
from nsframe.exceptions import (
    InvalidInputError,
    NamespaceNotFoundError,
    RequestTimeoutError,
    ResponseDecodeError,
    ServerError,
    ServiceUnavailableError,
    TableNotFoundError,
    TooManyRequestsError,
    TransportError,
)

# (status, headers, body) for each request, in order; the last one repeats.
Script = list[tuple[int, dict[str, str], bytes]]


class Scripted:
    """A real HTTP server answering from a script, recording every request."""

    def __init__(self, script: Script, drop_first: int = 0) -> None:
        self.script = script
        self.drop_first = drop_first
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding") == "chunked":
                    body = self._read_chunked()
                outer.times.append(time.monotonic())
                outer.requests.append({"method": self.command, "path": self.path,
                                       "headers": dict(self.headers), "body": body})
                n = len(outer.requests)
                if n <= outer.drop_first:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, headers, payload = outer.script[min(n - outer.drop_first,
                                                             len(outer.script)) - 1]
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _read_chunked(self) -> bytes:
                data = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()

            do_GET = do_POST = do_any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()




def ok_json(body: Any) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def error(status: int, code: int, detail: str, **headers: str
          ) -> tuple[int, dict[str, str], bytes]:
    body = {"type": "/errors/x", "title": "T", "status": status, "detail": detail,
            "instance": "/v1/x", "code": code, "error": detail}
    return status, {"Content-Type": "application/json", **headers}, json.dumps(body).encode()


@pytest.fixture
def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def test_closed_port_is_a_transport_error(closed_port: int) -> None:
    conn = nsframe.connect(f"http://127.0.0.1:{closed_port}", retries=1)
    conn.client.backoff = 0.01
    with pytest.raises(TransportError) as info:
        conn.namespaces()
    assert f"127.0.0.1:{closed_port}" in str(info.value)
    assert "server is running" in str(info.value)
    assert not isinstance(info.value, RequestTimeoutError)


def test_silent_server_is_a_timeout() -> None:
    # Listening but never accepting: the connection opens, no answer ever comes.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        client = Client(url, timeout=0.5, retries=3)
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError, match=r"0\.5s"):
            client.describe_namespace("db")
        # A slow answer is not retried (the server may still be working on it): four
        # tries would take 2 s; the margin is for a busy machine.
        assert time.monotonic() - started < 1.5


def test_503_with_retry_after_is_retried_and_honoured(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(503, 17, "busy", **{"Retry-After": "1"}),
                       error(503, 17, "busy", **{"Retry-After": "1"}),
                       ok_json({"properties": {"a": "b"}})])
    client = Client(server.url, retries=3, backoff=0.001)
    assert client.describe_namespace("db") == {"properties": {"a": "b"}}
    assert len(server.requests) == 3
    gaps = [b - a for a, b in zip(server.times, server.times[1:], strict=False)]
    assert all(gap >= 0.95 for gap in gaps), gaps


def test_429_then_success(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(429, 21, "slow down", **{"Retry-After": "0"}), ok_json(7)])
    assert Client(server.url, backoff=0.001).count_rows("db$t") == 7
    assert len(server.requests) == 2


def test_retries_give_up_with_the_last_error(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(503, 17, "still busy", **{"Retry-After": "0"})])
    with pytest.raises(ServiceUnavailableError, match="still busy"):
        Client(server.url, retries=2, backoff=0.001).describe_table("db$t")
    assert len(server.requests) == 3


def test_insert_is_never_retried(scripted: Callable[..., Scripted]) -> None:
    # The insert first asks for the table's embedding functions (a describe, here of a
    # table the server does not know: nothing to fill in), then sends the rows once.
    server = scripted([error(404, 4, "no such table"),
                       error(503, 17, "busy", **{"Retry-After": "0"}), ok_json({"version": 2})])
    conn = nsframe.connect(server.url, retries=5)
    with pytest.raises(ServiceUnavailableError):
        conn.table("db$t").insert(pa.table({"id": [1]}))
    inserts = [r for r in server.requests if "/insert" in r["path"]]
    assert len(inserts) == 1 and len(server.requests) == 2
    assert inserts[0]["path"].startswith("/v1/table/db%24t/insert")
    # The body that did arrive is a complete Arrow IPC stream.
    got = pa.ipc.open_stream(inserts[0]["body"]).read_all()
    assert got.column("id").to_pylist() == [1]


def test_delete_and_create_are_never_retried(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(429, 21, "busy", **{"Retry-After": "0"})])
    client = Client(server.url, retries=5)
    with pytest.raises(TooManyRequestsError):
        client.delete("db$t", "id = 1")
    with pytest.raises(TooManyRequestsError):
        client.create_namespace("db")
    assert len(server.requests) == 2


def test_dropped_connection_is_retried_on_reads(scripted: Callable[..., Scripted]) -> None:
    server = scripted([ok_json({"namespaces": ["a"], "page_token": None})], drop_first=1)
    conn = nsframe.connect(server.url, retries=2)
    conn.client.backoff = 0.001
    assert conn.namespaces() == ["a"]
    assert len(server.requests) == 2


def test_retry_after_parsing() -> None:
    assert retry_after("3") == 3.0
    assert retry_after(None) is None
    assert retry_after("soon") is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    wait = retry_after(later)
    assert wait is not None and 25 <= wait <= 31


def test_headers_credentials_context_and_delimiter(scripted: Callable[..., Scripted]) -> None:
    server = scripted([ok_json({"properties": None})])
    conn = nsframe.connect(server.url, api_key="k-123", token="t-456", database="prod",
                           headers={"x-extra": "1"}, context={"trace_id": "abc"},
                           delimiter=".")
    conn.namespace("a.b c").properties()
    sent = server.requests[0]
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["x-api-key"] == "k-123"
    assert headers["authorization"] == "Bearer t-456"
    assert headers["x-service-database"] == "prod"
    assert headers["x-service-ctx-trace_id"] == "abc"
    assert headers["x-extra"] == "1"
    assert headers["x-request-id"]
    assert sent["path"] == "/v1/namespace/a.b%20c/describe?delimiter=."


def test_repr_never_shows_secrets(scripted: Callable[..., Scripted]) -> None:
    server = scripted([ok_json({})])
    conn = nsframe.connect(server.url, api_key="sekrit-key", token="sekrit-token")
    for text in (repr(conn), repr(conn.client), str(conn), conn._repr_html_()):
        assert "sekrit" not in text
    assert "api_key=***" in repr(conn) and "token=***" in repr(conn)


def test_error_body_maps_to_its_class(conn: nsframe.Connection, ns: str) -> None:
    with pytest.raises(TableNotFoundError) as info:
        conn.table(f"{ns}$missing").describe()
    err = info.value
    assert (err.status, err.code) == (404, 4)
    assert "missing" in err.detail
    assert err.instance and err.instance.endswith("/describe")
    assert err.method == "POST" and err.url and err.url.startswith("http://")
    assert err.request_id
    assert err.response.status_code == 404
    # The message says what is wrong; the request is in the attributes and the repr.
    assert str(err) == f"Table '{ns}$missing' does not exist. (request id {err.request_id})"
    assert f"{ns}%24missing/describe" in repr(err) and "status=404" in repr(err)
    with pytest.raises(NamespaceNotFoundError) as dropped:
        conn.drop_namespace(f"{ns}$nope$deeper")
    assert dropped.value.status == 400  # spec/SEED_SPEC.md: mode Fail on a missing namespace


def test_non_json_error_body(scripted: Callable[..., Scripted]) -> None:
    server = scripted([(502, {"Content-Type": "text/plain"}, b"upstream proxy exploded")])
    with pytest.raises(ServerError, match="upstream proxy exploded") as info:
        Client(server.url, retries=0).describe_table("db$t")
    assert info.value.status == 502


def test_upstream_style_error_body(scripted: Callable[..., Scripted]) -> None:
    # The reference server's body: {"code", "error"} only.
    body = json.dumps({"code": 13, "error": "bad filter"}).encode()
    server = scripted([(400, {"Content-Type": "application/json"}, body)])
    with pytest.raises(InvalidInputError, match="bad filter") as info:
        Client(server.url).count_rows("db$t", predicate="x")
    assert info.value.code == 13


def test_2xx_with_a_body_that_is_not_json(scripted: Callable[..., Scripted]) -> None:
    server = scripted([(200, {"Content-Type": "application/json"}, b"<html>hi</html>")])
    with pytest.raises(ResponseDecodeError, match="not JSON"):
        Client(server.url).describe_namespace("db")


def test_query_answer_that_is_not_arrow(scripted: Callable[..., Scripted]) -> None:
    server = scripted([(200, {"Content-Type": "application/vnd.apache.arrow.file"}, b"nope")])
    with pytest.raises(ResponseDecodeError, match="Arrow"):
        Client(server.url).query("db$t", {"k": 1})


def _big_table() -> pa.Table:
    """About 6 MiB: more than the client reads in one call."""
    ids = np.arange(600_000, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array((ids % 1000).astype(str))})


def _ipc_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=50_000):
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


ARROW_FILE = {"Content-Type": "application/vnd.apache.arrow.file"}
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def test_query_answers_decode_as_files_streams_and_files_without_eos(
        scripted: Callable[..., Scripted]) -> None:
    # Files over 4 MiB are decoded while they arrive (as the IPC stream inside them); a
    # file whose writer left out the end-of-stream marker falls back to a whole-file read.
    table = _big_table()
    whole = _ipc_file(table)
    footer_at = len(whole) - 10 - int.from_bytes(whole[-10:-6], "little")
    assert whole[footer_at - 8:footer_at] == EOS
    without_eos = whole[:footer_at - 8] + whole[footer_at:]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    stream = bytes(sink.getvalue().to_pybytes())
    server = scripted([(200, ARROW_FILE, whole), (200, ARROW_FILE, without_eos),
                       (200, {"Content-Type": "application/vnd.apache.arrow.stream"}, stream)])
    client = Client(server.url)
    for _ in range(3):
        assert client.query("db$t", {"k": 1}).equals(table)


@pytest.mark.parametrize("cut", ["footer", "half"])
def test_query_answer_cut_short_is_a_decode_error(scripted: Callable[..., Scripted],
                                                   cut: str) -> None:
    table = _big_table()
    whole = _ipc_file(table)
    footer_at = len(whole) - 10 - int.from_bytes(whole[-10:-6], "little")
    body = whole[:footer_at] if cut == "footer" else whole[:len(whole) // 2]
    server = scripted([(200, ARROW_FILE, body), (200, ARROW_FILE, whole)])
    client = Client(server.url)
    with pytest.raises(ResponseDecodeError, match="not Arrow IPC"):
        client.query("db$t", {"k": 1})
    # The connection is still usable for the next answer.
    assert client.query("db$t", {"k": 1}).equals(table)


@pytest.mark.parametrize("name", [
    pytest.param("with space", id="space"),
    pytest.param("pct%41?q#frag", id="url-metacharacters"),
    pytest.param("naïve-日本", id="unicode"),
])
def test_ids_are_url_quoted(conn: nsframe.Connection, ns: str, name: str) -> None:
    tbl = conn.create_table(f"{ns}${name}", {"id": [1, 2]})
    assert tbl.count_rows() == 2
    assert conn.table_names(ns) == [f"{ns}${name}"]


def test_custom_delimiter_against_the_server(base_url: str, ns: str) -> None:
    with nsframe.connect(base_url, delimiter="/") as conn:
        conn.create_namespace(f"{ns}/sub")
        tbl = conn.create_table(f"{ns}/sub/t", {"id": [1, 2, 3]})
        assert tbl.count_rows("id > 1") == 2
        assert conn.table_names(f"{ns}/sub") == [f"{ns}/sub/t"]


def test_stats_version_and_extended_operations_send_their_routes(
        scripted: Callable[..., Scripted]) -> None:
    stats = {"total_bytes": 4096, "num_rows": 30, "num_indices": 2,
             "fragment_stats": {"num_fragments": 3, "num_small_fragments": 1,
                                "lengths": {"min": 5, "max": 15, "mean": 10.0}}}
    server = scripted([
        ok_json(stats),
        ok_json({"version": {"version": 4, "timestamp_millis": 0, "metadata": {}}}),
        ok_json({"tables": ["a$t"], "page_token": "next"}),
        ok_json({"tables": ["b"], "page_token": None}),
        ok_json({"table": "a$t", "version": 1}),
        ok_json({"table": "a$u", "version": None}),
    ])
    conn = nsframe.connect(server.url, database="prod")
    got = conn.table("a$t").branch("exp").stats()
    assert got == nsframe.TableStatistics(
        total_bytes=4096, num_rows=30, num_indices=2,
        fragment_stats=nsframe.FragmentStatistics(3, 1, {"min": 5, "max": 15, "mean": 10.0}))
    assert conn.table("a$t").at(version=4).describe_version().version == 4
    assert conn.database_table_names() == ["a$t", "b"]
    conn.create_database_table("a$t", pa.table({"id": [1, 2]}))
    conn.create_database_table("a$u")
    sent = [(r["method"], r["path"]) for r in server.requests]
    assert sent == [
        ("POST", "/v1/table/a%24t/stats"),
        ("POST", "/v1/table/a%24t/version/describe"),
        ("GET", "/v1/tables"),
        ("GET", "/v1/tables?page_token=next"),
        ("POST", "/v1/tables/a%24t"),
        ("POST", "/v1/tables/a%24u"),
    ]
    bodies = [r["body"] for r in server.requests]
    assert json.loads(bodies[0]) == {"branch": "exp"}
    assert json.loads(bodies[1]) == {"version": 4}
    assert pa.ipc.open_stream(bodies[4]).read_all().column("id").to_pylist() == [1, 2]
    assert bodies[5] == b""  # no body: the table is only declared
    for request in server.requests[4:]:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["content-type"] == "application/vnd.apache.arrow.stream"
        assert headers["x-service-database"] == "prod"
    conn.close()
