"""Clients that misbehave on purpose: raw sockets that stall, and timing of the answers
others get meanwhile (tests/server/test_starvation.py and neighbours)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

ARROW_STREAM = "application/vnd.apache.arrow.stream"


def schema_message(schema: pa.Schema) -> bytes:
    """The first message of an Arrow IPC stream: what a client sends before any rows."""
    return bytes(schema.serialize().to_pybytes())


def open_request(base_url: str, path: str, *, headers: dict[str, str],
                 body: bytes = b"", timeout: float = 30.0) -> socket.socket:
    """Send a request's head and ``body`` (which may be a part of what the head
    announces) on a fresh connection, and leave it open."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    sock = socket.create_connection((host, port), timeout=timeout)
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
    return sock


def read_status(sock: socket.socket) -> tuple[int, bytes]:
    """The status code of the answer on ``sock``, and the bytes read with it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    line = data.split(b"\r\n", 1)[0]
    return (int(line.split()[1]) if line.startswith(b"HTTP/") else 0), data


@contextmanager
def stalled_uploads(base_url: str, path: str, schema: pa.Schema,
                    count: int) -> Iterator[list[socket.socket]]:
    """``count`` inserts that send their Arrow schema, announce 100 MB more, and stop."""
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = open_request(base_url, path, body=schema_message(schema), headers={
                "Content-Type": ARROW_STREAM, "Content-Length": str(100_000_000)})
            stack.callback(sock.close)
            sockets.append(sock)
        yield sockets


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()``'s result and how many seconds it took."""
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started
