"""No 500 for malformed input, every error in the contract's body, and no error answer
closes a keep-alive connection (issue points 4 and 5).

The corpus below is the hand-made counterpart of the fuzzer (tests/fuzz): corrupt and
truncated Arrow, non-UTF-8 names, huge numbers, deep JSON, wrong content types, foreign
Host and Origin. Each case is sent on one shared keep-alive connection, and after each
answer that same connection must still carry a request: an error never costs the client
its connection.
"""

from __future__ import annotations

import http.client
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from nsframe.server._http import results
from nsframe.server._security.credentials import Credentials
from nsframe.server._storage.catalog import Catalog
from tests.support import ARROW_HEADERS, ipc_stream

JSON = {"Content-Type": "application/json"}
KEY = "malformed-" + "k" * 20
MEMBERS = {"type", "title", "status", "detail", "instance", "code", "error"}


def vectors(n: int) -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, np.float32)), 4),
    })


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("malformed")) as running:
        assert requests.post(f"{running.url}/v1/namespace/n/create", json={}).ok
        resp = requests.post(f"{running.url}/v1/table/n$t/create", data=ipc_stream(vectors(50)),
                             headers=ARROW_HEADERS)
        assert resp.status_code == 200, resp.text
        yield running


class Connection:
    """One keep-alive HTTP/1.1 connection, checked never to be closed by the server."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        self.sock: Any = None

    def send(self, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             method: str = "POST") -> tuple[int, dict[str, str], bytes]:
        self.conn.request(method, path, body=body, headers=headers or {})
        resp = self.conn.getresponse()
        data = resp.read()
        if self.sock is None:
            self.sock = self.conn.sock
        # The same socket each time: http.client would reconnect silently otherwise.
        assert self.conn.sock is self.sock, "the server closed the connection"
        assert (resp.getheader("connection") or "").lower() != "close", (path, data[:200])
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def close(self) -> None:
        self.conn.close()


def arrow_bytes(table: pa.Table) -> bytes:
    return ipc_stream(table)


def arrow_file(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


GOOD = ipc_stream({"id": [7], "v": vectors(1).column("v")})
NOT_UTF8 = ipc_stream({"zzq": [1]}).replace(b"zzq", b"\xff\xfe\xfd")
HUGE_INT = b"1" + b"0" * 5000
ARROW = ARROW_HEADERS

# (name, path, body, headers, expected status)
CORPUS: list[tuple[str, str, bytes, dict[str, str], int]] = [
    # Arrow bodies
    ("arrow-random-bytes", "/v1/table/n$t/insert", bytes(range(256)) * 4, ARROW, 400),
    ("arrow-zeros", "/v1/table/n$t/insert", b"\x00" * 64, ARROW, 400),
    ("arrow-truncated", "/v1/table/n$t/insert", GOOD[:-30], ARROW, 400),
    # A stream may end without its end-of-stream marker: a schema alone is no rows.
    ("arrow-schema-only-no-end", "/v1/table/n$t/insert",
     bytes(vectors(1).schema.serialize().to_pybytes()), ARROW, 200),
    ("arrow-file-not-stream", "/v1/table/n$t/insert", arrow_file(vectors(2)), ARROW, 400),
    ("arrow-non-utf8-field-name", "/v1/table/n$new1/create", NOT_UTF8, ARROW, 400),
    ("arrow-dotted-column", "/v1/table/n$new2/create", ipc_stream({"a.b": [1]}), ARROW, 400),
    ("arrow-empty-name", "/v1/table/n$new3/create", ipc_stream({"": [1]}), ARROW, 400),
    ("arrow-flipped-bytes", "/v1/table/n$t/insert",
     GOOD[:40] + bytes(b ^ 0xFF for b in GOOD[40:80]) + GOOD[80:], ARROW, 400),
    ("arrow-wrong-schema", "/v1/table/n$t/insert", ipc_stream({"x": ["a"]}), ARROW, 400),
    # huge numbers
    ("vector-1e309", "/v1/table/n$t/query", b'{"vector": [1e309, 0, 0, 0], "k": 3}', JSON, 400),
    ("vector-nested-1e309", "/v1/table/n$t/query", b'{"vector": [[0, 1e309, 0, 0]]}', JSON, 400),
    ("single-vector-1e309", "/v1/table/n$t/query",
     b'{"vector": {"single_vector": [-1e309, 0, 0, 0]}}', JSON, 400),
    ("lower-bound-1e309", "/v1/table/n$t/query",
     b'{"vector": [0, 0, 0, 0], "lower_bound": 1e309}', JSON, 400),
    ("upper-bound-1e309", "/v1/table/n$t/query",
     b'{"vector": [0, 0, 0, 0], "upper_bound": -1e999}', JSON, 400),
    ("k-4300-digits", "/v1/table/n$t/query", b'{"k": ' + HUGE_INT + b"}", JSON, 400),
    ("vector-4300-digits", "/v1/table/n$t/query",
     b'{"vector": [' + HUGE_INT + b", 0, 0, 0]}", JSON, 400),
    ("version-4300-digits", "/v1/table/n$t/describe", b'{"version": ' + HUGE_INT + b"}", JSON,
     400),
    ("properties-4300-digits", "/v1/table/n$d/declare",
     b'{"properties": {"a": ' + HUGE_INT + b"}}", JSON, 400),
    ("k-int64-max", "/v1/table/n$t/query", b'{"vector": [0, 0, 0, 1], "k": 9223372036854775807}',
     JSON, 400),
    # deep and broken JSON
    ("json-deep-array", "/v1/namespace/d1/create", b"[" * 100_000, JSON, 400),
    ("json-deep-object", "/v1/namespace/d2/create", b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
     JSON, 400),
    ("json-deep-in-member", "/v1/table/n$t/query", b'{"columns": ' + b"[" * 100_000, JSON, 400),
    ("json-not-utf8", "/v1/namespace/d3/create", b'{"mode": "\xff"}', JSON, 400),
    ("json-nul", "/v1/table/n$t/count_rows", b'{"predicate": "id = 1\\u0000"}', JSON, 400),
    ("json-lone-surrogate", "/v1/namespace/d4/create", b'{"properties": {"\\udc00": "x"}}',
     JSON, 400),
    ("json-trailing-garbage", "/v1/namespace/d5/create", b"{} {}", JSON, 400),
    # wrong content types
    ("json-as-text-plain", "/v1/table/n$t/delete", b'{"predicate": "true"}',
     {"Content-Type": "text/plain"}, 415),
    ("json-as-form", "/v1/namespace/n/drop", b"behavior=cascade",
     {"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ("arrow-without-type", "/v1/table/n$t/insert", GOOD, {}, 415),
    ("json-to-arrow-route", "/v1/table/n$t/insert", b'{"data": []}', JSON, 415),
    # foreign Host and Origin
    ("foreign-host", "/v1/table/n$t/describe", b"{}", {**JSON, "Host": "evil.example"}, 400),
    ("foreign-origin", "/v1/table/n$t/delete", b'{"predicate": "true"}',
     {**JSON, "Origin": "https://evil.example"}, 403),
    ("origin-null", "/v1/namespace/n/drop", b"{}", {**JSON, "Origin": "null"}, 403),
    # hostile SQL
    ("predicate-exploding", "/v1/table/n$t/count_rows",
     json.dumps({"predicate": "NOT (" * 40 + "id = 1" + ")" * 40}).encode(), JSON, 400),
    ("filter-unbalanced", "/v1/table/n$t/query", b'{"filter": "id = 1) OR (true"}', JSON, 400),
    ("index-name-traversal", "/v1/table/n$t/create_scalar_index",
     b'{"column": "id", "index_type": "BTREE", "name": "../../x"}', JSON, 400),
]


def test_the_corpus_of_malformed_requests_on_one_connection(target: RunningServer) -> None:
    conn = Connection(target.url)
    try:
        for name, path, body, headers, expected in CORPUS:
            status, answer_headers, data = conn.send(path, body, headers)
            assert status == expected, (name, data[:300])
            if status >= 400:
                assert answer_headers["content-type"].startswith("application/json"), name
                parsed = json.loads(data)
                assert set(parsed) >= MEMBERS and parsed["status"] == status, name
                assert b"Traceback" not in data and b"/tmp/" not in data, name
            # ... and the connection still serves a plain read.
            status, _, _ = conn.send("/v1/table/n$t/count_rows", b"{}", JSON)
            assert status == 200, name
    finally:
        conn.close()
    assert requests.post(f"{target.url}/v1/table/n$t/count_rows", json={}).json() == 50


def test_deep_json_without_credentials_is_a_json_401(tmp_path: Path) -> None:
    """Before: RecursionError in the credential check, and a plain-text 500."""
    with serve_in_thread(tmp_path, api_keys=[KEY]) as server:
        conn = Connection(server.url)
        try:
            for body in (b"[" * 100_000, b"[" * 60_000, b'{"identity": ' + b"[" * 60_000,
                         b'{"x": ' + HUGE_INT + b"}"):
                status, headers, data = conn.send("/v1/namespace/x/create", body, JSON)
                assert status == 401 and json.loads(data)["code"] == 16
                assert headers["content-type"].startswith("application/json")
        finally:
            conn.close()


# ----------------------------------------------------------------------- point 5
@pytest.fixture
def failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    """A server with a bug: describing namespace `boom` raises."""
    real = Catalog.namespace_properties

    def buggy(self: Catalog, ident: list[str]) -> dict[str, str]:
        if ident == ["boom"]:
            raise RuntimeError("a bug in the server")
        return real(self, ident)

    monkeypatch.setattr(Catalog, "namespace_properties", buggy)
    with serve_in_thread(tmp_path) as running:
        assert requests.post(f"{running.url}/v1/namespace/boom/create", json={}).ok
        yield running


def test_a_500_keeps_the_connection(failing: RunningServer) -> None:
    """Before: 9 of 10 requests after a 500 on the same connection failed with a reset."""
    conn = Connection(failing.url)
    try:
        for _ in range(10):
            status, headers, data = conn.send("/v1/namespace/boom/describe", b"{}", JSON)
            assert status == 500 and json.loads(data)["code"] == 18
            assert headers["content-type"].startswith("application/json")
            assert b"a bug in the server" not in data
            status, _, _ = conn.send("/v1/namespace/boom/exists", b"{}", JSON)
            assert status == 200
    finally:
        conn.close()


def test_the_client_sees_the_500_not_a_transport_error(failing: RunningServer) -> None:
    import nsframe
    from nsframe.exceptions import ServerError

    with nsframe.connect(failing.url) as db:
        for _ in range(5):
            with pytest.raises(ServerError):
                db.client.describe_namespace("boom")
            db.client.create_namespace("boom", mode="exist_ok")  # a write, never retried


def test_an_error_in_the_credential_check_is_a_json_500(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Credentials, api_key: str | None, bearer: str | None) -> Any:
        raise RuntimeError("auth bug")

    with serve_in_thread(tmp_path, api_keys=[KEY]) as server:
        monkeypatch.setattr(Credentials, "authenticate", broken)
        conn = Connection(server.url)
        try:
            for _ in range(3):
                status, headers, data = conn.send("/v1/namespace/$/list", method="GET",
                                                  headers={"x-api-key": KEY})
                assert status == 500 and set(json.loads(data)) >= MEMBERS
                assert headers["content-type"].startswith("application/json")
        finally:
            conn.close()


def test_a_stream_that_fails_half_way_ends_cleanly(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The status line is gone: the body ends early (no Arrow footer), the connection
    stays usable, and the server's log has the failure."""
    with serve_in_thread(tmp_path) as server:
        resp = requests.post(f"{server.url}/v1/table/t/create", data=ipc_stream(vectors(400_000)),
                             headers=ARROW_HEADERS)
        assert resp.status_code == 200, resp.text
        calls = 0
        real = results._Rest.next_pieces

        def fail_later(self: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls > 1:
                raise RuntimeError("storage vanished")
            return real(self)

        monkeypatch.setattr(results._Rest, "next_pieces", fail_later)
        conn = Connection(server.url)
        try:
            status, _, data = conn.send("/v1/table/t/query", b'{"k": 0}', JSON)
            assert status == 200 and not data.endswith(b"ARROW1")
            assert len(data) > results.INLINE_BYTES
            status, _, data = conn.send("/v1/table/t/count_rows", b"{}", JSON)
            assert (status, data) == (200, b"400000")
        finally:
            conn.close()
