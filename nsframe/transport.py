"""Transports: what carries nsframe's requests to a server, in the manner of httpx's
``transport=``.

A `Transport` has two methods: ``send(method, url, *, headers, body, timeout, stream)``
returns a `Response` of any status, and ``close()``. nsframe provides two:

- `HTTPTransport`: HTTP(S) through pooled keep-alive connections (urllib3);
- `EmbeddedTransport`: an ASGI app called in this process, no socket (what
  ``nsframe.connect(path)`` uses for its embedded server).

Everything else (headers, retries per `nsframe.RetryConfig`, the call's deadline per
`nsframe.TimeoutConfig`, error answers raised as `nsframe.exceptions`) happens above the
transport, identically for each. Pass your own with ``nsframe.connect(url,
transport=...)``, for instance to record or alter requests.
"""

from nsframe._client.exchange import (
    NO_LIMITS,
    Body,
    BodyStream,
    ConnectError,
    ConnectTimeout,
    Headers,
    PoolTimeout,
    ReadError,
    ReadTimeout,
    Request,
    Response,
    SendError,
    Timeout,
    Transport,
)
from nsframe._client.http import HTTPTransport
from nsframe._client.inprocess import EmbeddedTransport
from nsframe._public import show_public as _show_public

__all__ = [
    "NO_LIMITS",
    "Body",
    "BodyStream",
    "ConnectError",
    "ConnectTimeout",
    "EmbeddedTransport",
    "HTTPTransport",
    "Headers",
    "PoolTimeout",
    "ReadError",
    "ReadTimeout",
    "Request",
    "Response",
    "SendError",
    "Timeout",
    "Transport",
]

# Tracebacks and reprs show the public path, as httpx does.
_show_public(globals(), __name__)
