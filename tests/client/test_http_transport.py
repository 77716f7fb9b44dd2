"""`HTTPTransport`: what it sends (framing, chunked bodies, cookies), one pool shared by
many threads, large answers read in place, and an answer cut short."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nsframe import Client
from nsframe._client.http import POOL_SIZE
from nsframe.transport import HTTPTransport

from .test_http import Scripted, ok_json

IGNORED = {"x-request-id"}


def _sent(server: Scripted, client: Client, call: Callable[[Client], Any]) -> dict[str, Any]:
    call(client)
    request = dict(server.requests[-1])
    request["headers"] = {k.lower(): v for k, v in request["headers"].items()
                          if k.lower() not in IGNORED}
    return request


def _chunks() -> Iterator[bytes]:
    yield b"first piece "
    yield memoryview(b"second piece")  # type: ignore[misc]


def test_sends_the_headers_and_framing_of_each_body(
        scripted: Callable[..., Scripted]) -> None:
    server = scripted([ok_json({"ok": 1})])
    client = Client(server.url, api_key="key", context={"user": "u"})
    count = _sent(server, client, lambda c: c.call_json(
        "POST", "/v1/table/{id}/count_rows", "a$b c", idempotent=True,
        json={"predicate": "x > 1"}, params={"mode": "a b", "n": 3}))
    assert count["path"] == "/v1/table/a%24b%20c/count_rows?mode=a+b&n=3"
    assert count["body"] == b'{"predicate":"x > 1"}'  # compact, as msgspec writes it
    assert count["headers"]["x-api-key"] == "key"
    assert count["headers"]["x-service-ctx-user"] == "u"
    assert count["headers"]["content-type"] == "application/json"
    assert count["headers"]["user-agent"].startswith("nsframe/")
    streamed = _sent(server, client, lambda c: c.call_json(
        "POST", "/v1/table/{id}/insert", "t", idempotent=False, data=_chunks(),
        content_type="application/vnd.apache.arrow.stream"))
    assert streamed["headers"]["transfer-encoding"] == "chunked"
    assert streamed["body"] == b"first piece second piece"
    empty = _sent(server, client, lambda c: c.call_json("POST", "/v1/table/{id}/drop", "t",
                                                       idempotent=False))
    assert empty["headers"]["content-length"] == "0" and empty["body"] == b""


def test_a_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch,
                                              scripted: Callable[..., Scripted]
                                              ) -> None:
    server = scripted([ok_json({})])
    monkeypatch.setenv("HTTP_PROXY", server.url)  # the scripted server plays the proxy
    monkeypatch.setenv("NO_PROXY", "")
    client = Client("http://service.invalid:1")
    client.call_json("GET", "/v1/x", idempotent=True)
    assert server.requests[0]["path"] == "http://service.invalid:1/v1/x"


def test_cookies_are_kept_and_sent(scripted: Callable[..., Scripted]) -> None:
    server = scripted([(200, {"Set-Cookie": "route=a1; Path=/"}, b"{}"), ok_json({})])
    client = Client(server.url)
    client.call_json("GET", "/v1/x", idempotent=True)
    client.call_json("GET", "/v1/x", idempotent=True)
    assert server.requests[-1]["headers"].get("Cookie") == "route=a1"


def test_many_threads_share_one_pool_without_dropping_connections(
        scripted: Callable[..., Scripted], caplog: pytest.LogCaptureFixture) -> None:
    server = scripted([ok_json({})])
    client = Client(server.url)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                client.call_json("GET", "/v1/x", idempotent=True)
        except BaseException as exc:
            errors.append(exc)

    with caplog.at_level(logging.WARNING, logger="urllib3"):
        threads = [threading.Thread(target=work) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert len(server.requests) == 80
    assert "pool is full" not in caplog.text
    assert POOL_SIZE >= 16


def test_large_answers_are_read_in_place_and_keep_the_connection(tmp_path: Any) -> None:
    import numpy as np
    import pyarrow as pa

    import nsframe
    from nsframe.server import serve_in_thread

    vectors = np.random.default_rng(3).random((40_000, 64), dtype=np.float32)
    table = pa.table({"id": np.arange(40_000),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 64)})
    with serve_in_thread(tmp_path) as server, nsframe.connect(server.url) as conn:
        conn.create_namespace("db")
        conn.create_table("db$t", table)
        transport = conn.client.transport
        assert isinstance(transport, HTTPTransport)
        for _ in range(3):  # ~10 MB answers: streamed, read straight into one buffer
            assert conn.table("db$t").to_arrow().equals(table)
        pool, _, _ = transport._route(server.url + "/")
        assert pool.num_connections == 1


def test_an_answer_cut_short_is_a_transport_error() -> None:
    import socket

    from nsframe.exceptions import TransportError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        piece = b"ARROW1\x00\x00" + b"\x00" * (5 << 20)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.apache.arrow.file\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(piece) + piece
                     + b"\r\n")
        conn.close()  # no last chunk: the body broke off

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = Client(f"http://127.0.0.1:{listener.getsockname()[1]}", retries=0)
    with pytest.raises(TransportError, match="broke off"):
        client.query("t", {"k": 1})
    listener.close()
