"""The hot path under `Transport.request`: one call into urllib3's connection pool.

`requests.Session.request` does a lot per call that a client of one service never
needs again: a `Request` and a `PreparedRequest` (the URL parsed and re-quoted, headers
merged, cookies, hooks, auth, proxies looked up), an adapter looked up by prefix, a
connection pool found by key, a response built with its cookie jar filled. Measured on
these machines that is 0.3-0.9 ms of a k=10 query (benchmarks/README.md). Everything it
would decide is the same for every call of a `Transport`, so `FastPath` decides it once
and then sends each request straight through the very pool `requests` would have used.

It still answers a real `requests.Response` (with the urllib3 response as ``raw``), so
error mapping, decoding and retries above it are unchanged. It stands aside, and the
session does the work, whenever the session needs what only `requests` does: a proxy,
authentication hooks, cookies, response hooks or an adapter of the user's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.cookies import extract_cookies_to_jar
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers, select_proxy
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)

# Connections kept per service. requests keeps 10, so a client shared by more threads
# opens (and drops) a new connection per call beyond that; 64 covers typical pools.
POOL_SIZE = 64
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

Body = bytes | Iterator[bytes] | None
# Seconds to wait: one number for both, or (connect, read) as requests takes them.
Timeout = float | tuple[float | None, float | None] | None


class Sender(Protocol):
    """What sends a `Transport`'s requests: a `requests.Session`, a `FastPath` over
    one, or the embedded server's in-process transport."""

    def request(self, method: str, url: str, *, params: Mapping[str, str] | None = ...,
                data: Body = ..., headers: Mapping[str, str] | None = ...,
                timeout: Timeout = ..., stream: bool = ...) -> requests.Response: ...


class FastPath:
    """Sends a `Transport`'s requests through urllib3's pool under its session."""

    def __init__(self, session: requests.Session, base_url: str, adapter: HTTPAdapter,
                 pool: urllib3.HTTPConnectionPool) -> None:
        self._session = session
        self._adapter = adapter
        self._pool = pool
        parts = urlsplit(base_url)
        self._origin = f"{parts.scheme}://{parts.netloc}"

    @classmethod
    def for_session(cls, session: requests.Session, base_url: str) -> FastPath | None:
        """A fast path for ``session``'s calls to ``base_url``, or None when the session
        is set up in a way only `requests` honours (proxy, auth, client certificate...)."""
        scheme = urlsplit(base_url).scheme
        if scheme not in ("http", "https") or session.auth is not None \
                or select_proxy(base_url, session.proxies) is not None:
            return None
        # A pool large enough for a client shared by many threads, for both paths.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=POOL_SIZE)
        session.mount(base_url.rstrip("/") + "/", adapter)
        prepared = requests.Request("GET", base_url).prepare()
        try:
            host, options = adapter.build_connection_pool_key_attributes(
                prepared, True if session.verify is None else session.verify, session.cert)
        except (AttributeError, ValueError, OSError):  # an older requests, a bad bundle
            return None
        pool = adapter.poolmanager.connection_from_host(**host, pool_kwargs=options)
        return cls(session, base_url, adapter, pool)

    def _stands_aside(self, url: str) -> bool:
        session = self._session
        return (not url.startswith(self._origin) or session.auth is not None
                or bool(session.cookies) or any(session.hooks.get("response") or ()))

    def request(self, method: str, url: str, *, params: Mapping[str, str] | None = None,
                data: Body = None, headers: Mapping[str, str] | None = None,
                timeout: Timeout = None, stream: bool = False) -> requests.Response:
        """What ``session.request`` would answer for these arguments."""
        if self._stands_aside(url):
            return self._session.request(method, url, params=params, data=data,
                                         headers=headers, timeout=timeout, stream=stream)
        if params:
            url = f"{url}?{urlencode(list(params.items()))}"
        sent = request_headers(self._session, method, data, headers)
        chunked = "Transfer-Encoding" in sent
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        request = request_record(method, url, sent)
        try:
            raw = self._pool.urlopen(
                method, url[len(self._origin):], body=data, headers=sent,
                redirect=False, assert_same_host=False, preload_content=False,
                decode_content=False, retries=self._adapter.max_retries,
                timeout=urllib3.Timeout(connect=connect, read=read), chunked=chunked,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _as_requests_error(exc, request) from exc
        resp = _response(raw, request, self._adapter)
        if "set-cookie" in resp.headers:
            # Cookies from now on: the session keeps them and sends every later call.
            extract_cookies_to_jar(self._session.cookies, request, raw)  # type: ignore[no-untyped-call]
        if not stream:
            resp.content  # noqa: B018 - read now, which returns the connection to the pool
        return resp


def request_headers(session: requests.Session, method: str, data: Body,
                    headers: Mapping[str, str] | None) -> dict[str, str]:
    """The headers ``session.request`` would send: the session's, the call's over them
    (as requests merges them), and the body's length or chunked framing."""
    sent = {k: v if isinstance(v, str) else v.decode("latin-1")
            for k, v in session.headers.items()}
    sent.update(headers or {})
    if isinstance(data, (bytes, bytearray, memoryview)):
        sent["Content-Length"] = str(memoryview(data).nbytes)
    elif data is not None:
        sent["Transfer-Encoding"] = "chunked"
    elif method in _BODY_METHODS:
        sent["Content-Length"] = "0"  # as requests sends a body-less POST
    return sent


def request_record(method: str, url: str, headers: dict[str, str]) -> requests.PreparedRequest:
    """What a `requests.Response` says was sent (``resp.request``), without preparing it."""
    record = requests.PreparedRequest()
    record.method = method
    record.url = url
    record.headers = CaseInsensitiveDict(headers)
    return record


def _response(raw: Any, request: requests.PreparedRequest,
              adapter: HTTPAdapter) -> requests.Response:
    # As HTTPAdapter.build_response, less the cookie jar of the response itself.
    resp = requests.Response()
    resp.status_code = raw.status
    resp.headers = CaseInsensitiveDict(raw.headers)
    resp.encoding = get_encoding_from_headers(resp.headers)
    resp.raw = raw
    resp.reason = raw.reason
    resp.url = request.url or ""
    resp.request = request
    resp.connection = adapter
    return resp


def _as_requests_error(exc: Exception,
                       request: requests.PreparedRequest) -> requests.RequestException:
    """urllib3's exception as the `requests` exception the session would have raised."""
    if isinstance(exc, MaxRetryError):
        reason = exc.reason
        if isinstance(reason, ConnectTimeoutError) and not isinstance(reason,
                                                                      NewConnectionError):
            return requests.ConnectTimeout(exc, request=request)
        if isinstance(reason, SSLError):
            return requests.exceptions.SSLError(exc, request=request)
        return requests.ConnectionError(exc, request=request)
    if isinstance(exc, ReadTimeoutError):
        return requests.ReadTimeout(exc, request=request)
    if isinstance(exc, SSLError):
        return requests.exceptions.SSLError(exc, request=request)
    # ProtocolError, ClosedPoolError, OSError and the rest: the connection failed.
    return requests.ConnectionError(exc, request=request)
