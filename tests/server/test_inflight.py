"""The in-flight file of a worker: written while a request runs, empty once it ended, and
described for the log without secrets (`nsframe.server._inflight`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from starlette.types import Message, Receive, Scope, Send

from nsframe.server import _inflight
from nsframe.server._inflight import InFlight, Running, describe, read

BODY = b'{"filter": "id > 3", "nested": {"password": "hunter2-hunter2"}, "k": 10}'


def scope(path: bytes = b"/v1/table/ns%24t/query") -> Scope:
    return {"type": "http", "method": "POST", "path": path.decode(), "raw_path": path,
            "query_string": b"api_key=in-the-query-string",
            "headers": [(b"x-request-id", b"rid-1"), (b"content-type", b"application/json"),
                        (b"authorization", b"Bearer header-token-123456")]}


def run(middleware: InFlight, request: Scope, body: bytes) -> None:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        pass

    asyncio.run(middleware(request, receive, send))


def test_a_request_is_in_the_file_while_it_runs_and_gone_after(tmp_path: Path) -> None:
    slot = tmp_path / "1234"
    seen: list[tuple[list[Running], int]] = []
    raw: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(read(slot))  # before the body was read
        await receive()
        seen.append(read(slot))
        raw.append(slot.read_bytes())

    run(InFlight(app, slot), scope(), BODY)
    (before_body, _), (running, untracked) = seen
    assert untracked == 0 and len(running) == 1 and len(before_body) == 1
    assert before_body[0].body is None
    entry = running[0]
    assert (entry.method, entry.raw_path, entry.request_id) == (
        b"POST", b"/v1/table/ns%24t/query", b"rid-1")
    assert entry.body == BODY
    # Headers other than the id and the type, and the query string, are never written.
    assert b"header-token" not in raw[0] and b"in-the-query-string" not in raw[0]
    # Ended: no entry, and none of the request's bytes left in the file.
    assert read(slot) == ([], 0)
    assert slot.read_bytes() == bytes(_inflight.FILE_BYTES)


def test_the_description_masks_secrets_and_escapes_what_is_not_printable() -> None:
    entry = Running(started=100.0, method=b"POST", raw_path=b"/v1/table/a%0Ab/query",
                    request_id=b"rid\x1b[31m", content_type=b"application/json",
                    body=b'{"filter": "x = \'configured-key-0001\'", "token": "abc\\"def", '
                         b'"text": "Bearer tok-tok-tok", "api_key": "cut-off-in-the-mid')
    line = describe([entry], 0, secrets=["configured-key-0001", "k1"], now=101.5)
    assert line.startswith("1 request: POST /v1/table/a\\nb/query id=rid\\x1b[31m for 1.5s ")
    for secret in ("configured-key-0001", 'abc\\"def', "tok-tok-tok", "cut-off"):
        assert secret not in line
    assert line.count("<redacted>") == 3 and "<secret>" in line
    assert "\n" not in line and "\x1b" not in line


def test_an_arrow_body_is_named_not_shown_and_untracked_requests_are_counted() -> None:
    entry = Running(started=0.0, method=b"POST", raw_path=b"/v1/table/t/insert",
                    request_id=b"", content_type=b"application/vnd.apache.arrow.stream",
                    body=None)
    assert describe([entry], 2, now=3.0) == (
        "3 requests: POST /v1/table/t/insert for 3.0s "
        "(application/vnd.apache.arrow.stream body); 2 more not recorded")
    assert describe([], 0) == "no request"
