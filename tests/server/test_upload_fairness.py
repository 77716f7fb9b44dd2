"""Upload slots are shared fairly, and a body that trickles loses its slot (issue 23,
point 5).

Before: one client with a write credential held every upload slot with uploads that
trickle a byte at a time (the idle timeout never fires, the whole-body timeout is an
hour), and every other insert, create and merge_insert got 503 meanwhile. Now one
credential, or one client address, holds at most `upload_slots_per_client` slots, and
a body slower than `body_min_rate_bytes` per second over `body_rate_window` seconds
gets a 408 naming that limit, with nothing written.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest
import requests

from nsframe.exceptions import APIError
from nsframe.server import RunningServer, serve_in_thread
from nsframe.server._http.request import timed
from nsframe.server._limits import Limits
from tests.support import ARROW_HEADERS, ipc_stream
from tests.support.hostile import ARROW_STREAM, open_request, read_status

KEY_A = "fair-a-0123456789abcdef0123456789"
KEY_B = "fair-b-0123456789abcdef0123456789"
SCHEMA = pa.schema([("id", pa.int64())])
INSERT = "/v1/table/t/insert"


def body(ids: list[int]) -> bytes:
    return ipc_stream({"id": ids}, schema=SCHEMA)


def count(server: RunningServer) -> int:
    resp = requests.post(f"{server.url}/v1/table/t/count_rows", json={},
                         headers={"x-api-key": KEY_B})
    assert resp.status_code == 200, resp.text
    rows: int = resp.json()
    return rows


def make_table(server: RunningServer) -> None:
    resp = requests.post(f"{server.url}/v1/table/t/create", data=body([0]),
                         headers={**ARROW_HEADERS, "x-api-key": KEY_B})
    assert resp.status_code == 200, resp.text


@contextmanager
def trickling(server: RunningServer, count: int, key: str, *, every: float = 0.2
              ) -> Iterator[list[socket.socket]]:
    """``count`` inserts of a valid 1,000-row body sent one byte every ``every`` s."""
    payload = body(list(range(1000, 2000)))
    stop = threading.Event()
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = open_request(server.url, INSERT, body=payload[:1], headers={
                "Content-Type": ARROW_STREAM, "Content-Length": str(len(payload)),
                "x-api-key": key})
            stack.callback(sock.close)
            sockets.append(sock)

        def trickle() -> None:
            for i in range(1, len(payload)):
                if stop.wait(every):
                    return
                for sock in sockets:
                    # OSError: answered and closed, this one is done.
                    with contextlib.suppress(OSError):
                        sock.sendall(payload[i:i + 1])

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        stack.callback(sender.join)
        stack.callback(stop.set)
        yield sockets


def insert_from(server: RunningServer, address: str, key: str) -> tuple[int, dict[str, Any]]:
    """An insert by another client: its own credential, its own address."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30,
                                      source_address=(address, 0))
    try:
        conn.request("POST", INSERT, body=body([1]),
                     headers={"Content-Type": ARROW_STREAM, "x-api-key": key})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.fixture
def fair(tmp_path: Path) -> Iterator[RunningServer]:
    # Four upload slots, one credential's share is at most three of them.
    with serve_in_thread(tmp_path, api_keys=[KEY_A, KEY_B],
                         limits={"upload_slots": 4, "queue_timeout": 1.5}) as running:
        make_table(running)
        yield running


def test_one_client_cannot_hold_every_upload_slot(fair: RunningServer) -> None:
    with trickling(fair, 4, KEY_A) as sockets:
        time.sleep(0.5)  # every one of them has been admitted, or is waiting
        status, answer = insert_from(fair, "127.0.0.2", KEY_B)
        # Before: all 4 slots were held by the trickles, so this waited queue_timeout
        # and got a 503. A 200 means it found a slot free.
        assert status == 200, answer
        assert answer["num_inserted_rows"] == 1
        # The client's 4th upload waited for a share it never got, and was told why;
        # the other three still hold their slots, trickling.
        answered, _, _ = select.select(sockets, [], [], 30)
        assert len(answered) == 1
        status, raw = read_status(answered[0])
        assert status == 503
        assert b"upload_slots_per_client" in raw and b"retry-after" in raw.lower()
        time.sleep(0.5)
        assert select.select([s for s in sockets if s is not answered[0]], [], [], 0)[0] == []
    assert count(fair) == 2


def test_a_trickling_upload_is_cut_off_by_the_minimum_rate(tmp_path: Path) -> None:
    limits = {"body_min_rate_bytes": 1000, "body_rate_window": 1.0}
    with serve_in_thread(tmp_path, api_keys=[KEY_A, KEY_B], limits=limits) as server:
        make_table(server)
        with trickling(server, 1, KEY_A) as (sock,):
            sock.settimeout(30)
            status, raw = read_status(sock)
            while b"}" not in raw:
                raw += sock.recv(65536)
        # Not body_idle_timeout (30 s): a byte came every 0.2 s.
        assert status == 408
        error = json.loads(raw.split(b"\r\n\r\n", 1)[1])
        assert error["status"] == 408 and error["code"] == 13
        assert "body_min_rate_bytes" in error["detail"] and "1000" in error["detail"]
        # Nothing of the cut-off body was written.
        assert count(server) == 1
        # A body sent at an ordinary pace passes the same limits.
        resp = requests.post(f"{server.url}{INSERT}", data=body(list(range(10))),
                             headers={**ARROW_HEADERS, "x-api-key": KEY_B})
        assert resp.status_code == 200, resp.text
        assert count(server) == 11


def test_the_share_is_configurable_and_bounded(tmp_path: Path) -> None:
    limits = {"upload_slots": 2, "upload_slots_per_client": 5, "queue_timeout": 0.5}
    with serve_in_thread(tmp_path, api_keys=[KEY_A, KEY_B], limits=limits) as server:
        make_table(server)
        # Asking for more than the slots leaves one for others all the same.
        with trickling(server, 2, KEY_A) as sockets:
            sockets[1].settimeout(5)
            status, raw = read_status(sockets[1])
            assert status == 503 and b"1 of the 2 upload slots" in raw
            status, answer = insert_from(server, "127.0.0.3", KEY_B)
            assert status == 200, answer



async def _chunks(count: int, size: int, every: float) -> AsyncIterator[bytes]:
    for _ in range(count):
        await anyio.sleep(every)
        yield b"x" * size


async def _read_all(chunks: AsyncIterator[bytes], limits: Limits, busy: float) -> int:
    got = 0
    async for chunk in timed(chunks, limits):
        got += len(chunk)
        await anyio.sleep(busy)  # the reader at work (Lance writing), not the client
    return got


def test_the_rate_counts_only_the_time_spent_waiting_for_the_client() -> None:
    limits = Limits(body_min_rate_bytes=1000, body_rate_window=0.2)
    # 1,000 bytes per chunk, the reader busy 0.5 s after each: well within the rate.
    assert anyio.run(_read_all, _chunks(3, 1000, 0.0), limits, 0.5) == 3000
    with pytest.raises(APIError) as refused:
        anyio.run(_read_all, _chunks(100, 1, 0.05), limits, 0.0)
    assert refused.value.status == 408 and "body_min_rate_bytes" in str(refused.value)
