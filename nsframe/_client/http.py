"""`HTTPTransport`: requests over HTTP(S) through urllib3's connection pools.

urllib3 directly, rather than requests or httpx on top of it: per small call it costs
the least (benchmarks/bench_transports.py). A request's URL is cut into origin and
target by hand, and each origin's pool is looked up once, so a call is one
``pool.urlopen``. What requests would read from the environment is read once here:
proxies (``HTTP(S)_PROXY``, ``NO_PROXY``) and a CA bundle (``REQUESTS_CA_BUNDLE``,
``CURL_CA_BUNDLE``, else certifi's, as requests does). Cookies a server sets (a
balancer's sticky route) are kept by name and sent back.
"""

from __future__ import annotations

import http.client
import os
import threading
import urllib.request
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    EmptyPoolError,
    NewConnectionError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)

from nsframe._client.exchange import (
    NO_LIMITS,
    Body,
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
    framed,
)

# Connections kept per origin: a client shared by 16-64 threads reuses them all.
POOL_SIZE = 64


class HTTPTransport:
    """Sends requests over HTTP(S), keeping connections alive in a pool per origin.

    Args:
        pool_size: Connections kept per origin (default 64).
        pool_block: Wait (up to the pool timeout) for a free connection rather than
            open one beyond ``pool_size`` that is dropped after its call.
        verify: Check the server's TLS certificate (True), against a CA bundle file
            (a path), or not at all (False).
        cert: A client certificate file (or a (cert, key) pair) for TLS.
        proxy: A proxy URL; default from the environment (``HTTPS_PROXY``...).
        trust_env: Read proxies and a CA bundle from the environment.

    Example:
        >>> transport = nsframe.transport.HTTPTransport(pool_size=8)
        >>> nsframe.connect("http://127.0.0.1:2333", transport=transport)   # sends nothing yet
        Connection(Client('http://127.0.0.1:2333'))
    """

    def __init__(self, *, pool_size: int = POOL_SIZE, pool_block: bool = False,
                 verify: bool | str = True, cert: str | tuple[str, str] | None = None,
                 proxy: str | None = None, trust_env: bool = True) -> None:
        options: dict[str, Any] = {"maxsize": pool_size, "block": pool_block,
                                   "retries": False}
        bundle = verify if isinstance(verify, str) else None
        if trust_env and verify is True:
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if verify is True and not bundle:
            bundle = _certifi_bundle()  # the CA set requests used, where installed
        if verify is False:
            options["cert_reqs"] = "CERT_NONE"
        elif bundle:
            options["ca_certs"] = bundle
        if cert is not None:
            options["cert_file"], options["key_file"] = \
                (cert, None) if isinstance(cert, str) else cert
        self._options = options
        self._proxy = proxy
        self._trust_env = trust_env
        self._manager = urllib3.PoolManager(num_pools=4, **options)
        self._proxies: dict[str, urllib3.ProxyManager] = {}
        self._pools: dict[str, Any] = {}  # origin -> its pool, or a ProxyManager
        self._cookies: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HTTPTransport(pool_size={self._options['maxsize']})"

    def close(self) -> None:
        with self._lock:
            self._pools.clear()
            proxies, self._proxies = list(self._proxies.values()), {}
        self._manager.clear()
        for manager in proxies:
            manager.clear()

    def _route(self, url: str) -> tuple[Any, str, bool]:
        """(what sends, the URL to give it, whether that is a whole pool of the origin)."""
        cut = url.find("/", url.find("//") + 2)
        origin, target = (url, "/") if cut < 0 else (url[:cut], url[cut:])
        pool = self._pools.get(origin)
        if pool is None:
            with self._lock:
                pool = self._pools[origin] = self._pool_for(origin)
        if isinstance(pool, urllib3.ProxyManager):
            return pool, url, False
        return pool, target, True

    def _pool_for(self, origin: str) -> Any:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https"):
            raise ConnectError(f"{origin} is not an http(s) URL.")
        proxy = self._proxy
        if proxy is None and self._trust_env and not urllib.request.proxy_bypass(
                parts.hostname or ""):
            proxy = urllib.request.getproxies().get(parts.scheme)
        if proxy:
            manager = self._proxies.get(proxy)
            if manager is None:
                manager = self._proxies[proxy] = urllib3.ProxyManager(proxy, **self._options)
            return manager
        return self._manager.connection_from_url(origin)

    def send(self, method: str, url: str, *, headers: Mapping[str, str], body: Body = None,
             timeout: Timeout = NO_LIMITS, stream: bool = False) -> Response:
        sent = framed(method, headers, body)
        if self._cookies and "Cookie" not in sent:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self._cookies.items())
        sender, target, whole_pool = self._route(url)
        options: dict[str, Any] = {"pool_timeout": timeout.pool} if whole_pool else {}
        try:
            raw = sender.urlopen(
                method, target, body=body, headers=sent, redirect=False,
                assert_same_host=False, preload_content=False, decode_content=True,
                retries=False, timeout=urllib3.Timeout(connect=timeout.connect,
                                                       read=timeout.read),
                chunked=body is not None and not isinstance(body, (bytes, bytearray,
                                                                   memoryview)),
                **options,
            )
        except Exception as exc:
            raise as_send_error(exc) from exc
        if "set-cookie" in raw.headers:
            self._keep_cookies(raw.headers.getlist("set-cookie"))
        response = Response(raw.status, Headers(raw.headers.items()),
                            Request(method, url, sent), stream=_Body(raw),
                            reason=raw.reason)
        if not stream:
            response.content  # noqa: B018 - read now: the connection goes back to the pool
        return response

    def _keep_cookies(self, values: list[str]) -> None:
        for value in values:
            try:
                jar = SimpleCookie(value)
            except CookieError:
                continue
            for name, morsel in jar.items():
                self._cookies[name] = morsel.value


class _Body:
    """A urllib3 answer as a `BodyStream`: its failures as `SendError`s, and a
    ``readinto`` straight from the socket (http.client undoes the chunked framing)."""

    def __init__(self, raw: urllib3.BaseHTTPResponse) -> None:
        self._raw = raw
        fp = getattr(raw, "_fp", None)
        encoding = raw.headers.get("Content-Encoding", "identity").strip().lower()
        if fp is not None and hasattr(fp, "readinto") and encoding in ("", "identity"):
            self.readinto = self._readinto

    def read(self, amt: int | None = None) -> bytes:
        try:
            data = self._raw.read(amt)
        except Exception as exc:
            raise as_send_error(exc) from exc
        if amt is None:
            self._raw.release_conn()
        return data

    def _readinto(self, target: memoryview) -> int:
        try:
            got: int = self._raw._fp.readinto(target)  # type: ignore[attr-defined]
        except Exception as exc:
            raise as_send_error(exc) from exc
        if not got:
            self._raw.release_conn()
        return got

    def close(self) -> None:
        # A body read to its end went back to the pool already; one cut short may not be.
        self._raw.close()
        self._raw.release_conn()


def _certifi_bundle() -> str | None:
    try:
        import certifi
    except ImportError:  # the system's CA store, as urllib3 loads it
        return None
    where: str = certifi.where()
    return where


def as_send_error(exc: Exception) -> SendError:
    """urllib3's (or the socket's) failure as the `SendError` kind it is."""
    if isinstance(exc, SendError):
        return exc
    if isinstance(exc, NewConnectionError):  # refused, unreachable: before a byte went
        return ConnectError(str(exc))
    if isinstance(exc, ConnectTimeoutError):
        return ConnectTimeout(str(exc))
    if isinstance(exc, EmptyPoolError):
        return PoolTimeout(str(exc))
    if isinstance(exc, (SSLError, ProxyError)):
        return ConnectError(str(exc))
    if isinstance(exc, ReadTimeoutError):
        return ReadTimeout(str(exc))
    if isinstance(exc, (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)):
        return ReadError(str(exc))  # ProtocolError, a reset, an answer cut short
    raise exc
