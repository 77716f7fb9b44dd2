"""What a transport takes and gives: the `Transport` protocol, `Response`, `Timeout` and
the failures a transport raises when no answer came (re-exported by `nsframe.transport`).

A transport carries one request to a server and hands back its answer, whatever the
status: retries, timeouts per call, headers, and the mapping of error answers onto
`nsframe.exceptions` live above it, in the client (`nsframe/_client/transport.py`), so
every transport behaves alike.
"""

from __future__ import annotations

import http
import json as jsonlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa

# A request body: bytes, or an iterator of byte chunks (a streamed Arrow upload).
Body = bytes | Iterator[bytes] | None
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def framed(method: str, headers: Mapping[str, str], body: Body) -> dict[str, str]:
    """``headers`` plus the framing an HTTP request carries for ``body``: its length, or
    chunked for an iterator, or a length of 0 for a method that has a body."""
    sent = dict(headers)
    if isinstance(body, (bytes, bytearray, memoryview)):
        sent["Content-Length"] = str(memoryview(body).nbytes)
    elif body is not None:
        sent["Transfer-Encoding"] = "chunked"
    elif method in _BODY_METHODS:
        sent["Content-Length"] = "0"
    return sent


@dataclass(frozen=True)
class Timeout:
    """One attempt's limits, in seconds (None: no limit).

    Args:
        connect: To open a connection (and, as in urllib3, each wait while sending).
        read: Between bytes of the answer, once the request is sent.
        pool: To wait for a free pooled connection, when the pool blocks.
    """

    connect: float | None = None
    read: float | None = None
    pool: float | None = None


NO_LIMITS = Timeout()


@dataclass(frozen=True)
class Request:
    """What was sent: kept on the `Response` (and so on an error raised for it)."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


class Headers(Mapping[str, str]):
    """Response headers, looked up without regard to case; iterates in the case sent."""

    def __init__(self, pairs: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        self._items: dict[str, tuple[str, str]] = {}
        for key, value in items:
            lower = key.lower()
            if lower in self._items:  # repeated: joined, as HTTP allows
                value = f"{self._items[lower][1]}, {value}"
                key = self._items[lower][0]
            self._items[lower] = (key, value)

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({dict(self)!r})"


class BodyStream(Protocol):
    """The unread body of a streamed answer."""

    def read(self, amt: int | None = None) -> bytes:
        """Up to ``amt`` bytes (all that is left when None); b"" at the end."""

    def close(self) -> None:
        """Give the connection back (or drop it, when the body was not read whole)."""


class Response:
    """One answer, of any status, as a transport hands it to the client.

    Args:
        status_code: The HTTP status.
        headers: The answer's headers.
        request: What was sent.
        content: The whole body, when it was read already.
        stream: Else the body still to be read (``stream=True`` requests); a stream
            with a ``readinto(memoryview) -> int`` lets large Arrow answers be read
            into one buffer without a copy.
        arrow: The result as Arrow data, when the transport has it without decoding
            (the embedded transport); the body is then empty.
    """

    def __init__(self, status_code: int, headers: Headers | Mapping[str, str], request: Request,
                 *, content: bytes | None = None, stream: BodyStream | None = None,
                 arrow: pa.Table | None = None, reason: str | None = None) -> None:
        self.status_code = status_code
        self.headers = headers if isinstance(headers, Headers) else Headers(headers)
        self.request = request
        self.arrow = arrow
        self.reason = reason if reason is not None else _phrase(status_code)
        self._content = content
        self._stream = stream if content is None else None
        if content is None and stream is None:
            self._content = b""

    @property
    def url(self) -> str:
        return self.request.url

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}] {self.request.method} {self.url}>"

    @property
    def content(self) -> bytes:
        """The whole body (read now if it was streamed, then kept)."""
        if self._content is None:
            self._content = self.read()
            self.close()
        return self._content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)

    def read(self, amt: int | None = None) -> bytes:
        """The next ``amt`` bytes of a streamed body (the rest when None); b"" at its end."""
        if self._stream is None:
            if self._content is None:
                return b""
            data = self._content if amt is None else self._content[:amt]
            self._content = None if amt is None else self._content[amt:]
            return data
        return self._stream.read(amt)

    @property
    def readinto(self) -> Any:
        """The stream's ``readinto(memoryview) -> int``, or None when it has none."""
        if self._stream is None:
            return None
        into = getattr(self._stream, "readinto", None)
        return into if callable(into) else None

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


# ---------------------------------------------------------------- no answer came
class SendError(Exception):
    """A request got no (whole) answer. Transports raise one of its subclasses: the
    client decides from the kind whether the call may be sent again."""


class ConnectError(SendError):
    """No connection could be made: nothing of the request reached the server."""


class ConnectTimeout(ConnectError):
    """No connection within the connect timeout."""


class PoolTimeout(ConnectError):
    """No pooled connection came free within the pool timeout."""


class ReadError(SendError):
    """The connection broke once the request was (maybe partly) sent: the server may
    have acted on it."""


class ReadTimeout(SendError):
    """No answer within the read timeout, once the request was sent."""


@runtime_checkable
class Transport(Protocol):
    """Carries one request to a server and hands back its answer, of any status.

    ``url`` is absolute (``http://host:port/v1/...?query``); ``headers`` are all the
    request's headers; ``body`` is bytes or an iterator of byte chunks (sent chunked).
    With ``stream=False`` the body is read before `send` returns (the connection goes
    back to the pool); with ``stream=True`` the caller reads it and closes the
    `Response`. A request that got no answer raises a `SendError` subclass.
    """

    def send(self, method: str, url: str, *, headers: Mapping[str, str], body: Body = None,
             timeout: Timeout = NO_LIMITS, stream: bool = False) -> Response: ...

    def close(self) -> None: ...
