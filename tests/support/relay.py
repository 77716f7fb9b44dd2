"""What the tests' HTTP relays on loopback share (`s3.Proxy` in front of the store,
`balancer.Balancer` in front of replicas): a request handler that reads a whole request
body, chunked or not, and answers without Nagle's delay."""

from __future__ import annotations

import http.server
import socket
from typing import Any


class RelayHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the tests count requests instead

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm
        # and the client's delayed ACK stall each answer by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def read_body(self) -> bytes:
        """The request's body, whole (chunked transfer decoded)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunk = self.rfile.read(size)
                self.rfile.readline()
                if size == 0:
                    return b"".join(chunks)
                chunks.append(chunk)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))
