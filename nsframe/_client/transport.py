"""The client's one way of sending: headers, URLs, timeouts, retries and the mapping of
error answers onto `nsframe.exceptions`, the same whatever carries the request (a
`nsframe.transport.Transport`: HTTP, the embedded server in process, or the user's)."""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import netrc
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import urllib3

from nsframe._client import exchange
from nsframe._client.config import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_RETRY_DELAY,
    RetryConfig,
    TimeoutConfig,
)
from nsframe._client.config import retry_config as _retry_config
from nsframe._client.config import timeout_config as _timeout_config
from nsframe._client.exchange import Response, SendError
from nsframe._client.exchange import Transport as TransportProtocol
from nsframe._client.hints import client_message
from nsframe._client.http import HTTPTransport
from nsframe._client.wire import decode_json, encode_json
from nsframe._protocol import routes
from nsframe._protocol.ids import DEFAULT_DELIMITER
from nsframe._version import __version__
from nsframe.exceptions import (
    ConnectionClosedError,
    RequestTimeoutError,
    TransportError,
    error_class_for,
)

_Self = TypeVar("_Self", bound="Transport")


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Transport:
    """Sends requests to one service: credentials and context as headers, the delimiter
    as a parameter, idempotent calls retried, error answers raised as exceptions.

    The arguments are those of `nsframe.Client`, which adds one method per operation.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        database: str | None = None,
        headers: Mapping[str, str] | None = None,
        context: Mapping[str, str] | None = None,
        delimiter: str = DEFAULT_DELIMITER,
        timeout: float | None = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float | None = None,
        retry_config: RetryConfig | None = None,
        timeout_config: TimeoutConfig | None = None,
        transport: TransportProtocol | None = None,
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string, such as '$'.")
        if isinstance(retries, int) and not isinstance(retries, bool) and retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}.")
        if transport is not None and not isinstance(transport, TransportProtocol):
            raise TypeError("transport= takes an nsframe.transport.Transport (an object with "
                            f"send() and close()), got {type(transport).__name__}.")
        self.base_url = base_url.rstrip("/")
        self.database = database
        self.delimiter = delimiter
        self.retry_config = _retry_config(retry_config, retries, backoff)
        self.timeout_config = _timeout_config(timeout_config, timeout)
        self.context = dict(context or {})
        self.closed = False
        self._has_api_key = api_key is not None
        self._has_token = token is not None
        # The headers of every request; `request` adds each call's own.
        # Arrow answers are sent as they are: identity, as urllib3 asks by default.
        self.headers: dict[str, str] = {"User-Agent": f"nsframe/{__version__}",
                                        "Accept-Encoding": "identity"}
        self.headers.update(headers or {})
        if api_key is not None:
            self.headers[routes.API_KEY_HEADER] = api_key
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        if database is not None:
            self.headers[routes.DATABASE_HEADER] = database
        for key, value in self.context.items():
            self.headers[routes.CONTEXT_HEADER_PREFIX + key] = str(value)
        if not any(k.lower() == "authorization" for k in self.headers):
            self.headers.update(netrc_auth(self.base_url))
        # What carries each request (nsframe.transport).
        self.transport: TransportProtocol = transport if transport is not None \
            else HTTPTransport()

    def __repr__(self) -> str:
        secrets = [name for name, present in (("api_key", self._has_api_key),
                                              ("token", self._has_token)) if present]
        shown = "".join(f", {name}=***" for name in secrets)
        database = f", database={self.database!r}" if self.database else ""
        return f"{type(self).__name__}({self.base_url!r}{database}{shown})"

    def close(self) -> None:
        # Remembered, so that a later call says the connection is closed rather than
        # that the server cannot be reached (an embedded server stops with it).
        self.closed = True
        self.transport.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, template: str, ident: str | None = None, **parts: str) -> str:
        """The full URL of ``template``, each path part URL-quoted (names are user data)."""
        path = template
        if ident is not None:
            path = path.replace("{id}", quote(ident, safe=""))
        for key, value in parts.items():
            path = path.replace("{" + key + "}", quote(value, safe=""))
        return self.base_url + path

    def request(
        self,
        method: str,
        template: str,
        ident: str | None = None,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: bytes | Iterator[bytes] | None = None,
        content_type: str | None = None,
        parts: Mapping[str, str] | None = None,
        stream: bool = False,
    ) -> Response:
        """Send one request; retry it if it is safe to; raise for any error answer."""
        if self.closed:
            raise ConnectionClosedError(
                "This connection is closed (conn.close() was called, or its with-block "
                "ended): open a new one with nsframe.connect(...) and get the table from it."
            )
        url = self.url(template, ident, **(parts or {}))
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        if self.delimiter != DEFAULT_DELIMITER:
            query["delimiter"] = self.delimiter
        # One id for the call, sent again with each retry: the server's log lines of
        # every attempt carry it, and so does an error raised from the answer.
        target = f"{url}?{urlencode(list(query.items()))}" if query else url
        headers = {**self.headers, routes.REQUEST_ID_HEADER: uuid.uuid4().hex}
        body: bytes | Iterator[bytes] | None = data
        if json is not None:
            body = encode_json(json)
            content_type = routes.JSON
        if content_type:
            headers["Content-Type"] = content_type
        limit = self.timeout_config.seconds()[0]
        deadline = None if limit is None else time.monotonic() + limit
        policy = self._policy
        fresh_retry = idempotent
        while True:
            try:
                resp = self.transport.send(method, target, headers=headers, body=body,
                                           timeout=self._attempt(deadline), stream=stream)
            except SendError as exc:
                if fresh_retry and isinstance(exc, exchange.ReadError):
                    # Most often a keep-alive connection the server had closed: a read is
                    # sent again at once, once, on a fresh connection, whatever `retries`.
                    fresh_retry = False
                    continue
                nxt = _next_try(policy, method, url, exc, idempotent)
                if nxt is None or not self._pause(nxt.get_backoff_time(), deadline):
                    raise _transport_error(method, url, exc, self._waited(exc),
                                           write=not idempotent) from exc
                policy = nxt
                continue
            if idempotent and resp.status_code in self.retry_config.statuses:
                nxt = _next_try(policy, method, url, None, idempotent)
                hinted = retry_after(resp.headers.get("Retry-After"))
                wait = nxt.get_backoff_time() if nxt is not None and hinted is None else hinted
                if nxt is not None and wait is not None and self._pause(wait, deadline):
                    resp.close()
                    policy = nxt
                    continue
            raise_for_response(resp)
            return resp

    # The flat settings, kept as attributes: each maps onto (and replaces) the config.
    @property
    def timeout(self) -> float | None:
        return self.timeout_config.seconds()[2]

    @timeout.setter
    def timeout(self, seconds: float | None) -> None:
        self.timeout_config = _timeout_config(None, seconds)

    @property
    def retries(self) -> int:
        return self.retry_config.retries

    @retries.setter
    def retries(self, count: int) -> None:
        self.retry_config = dataclasses.replace(self.retry_config, retries=count,
                                                connect_retries=None, read_retries=None)

    @property
    def backoff(self) -> float:
        return self.retry_config.backoff_factor

    @backoff.setter
    def backoff(self, seconds: float) -> None:
        self.retry_config = dataclasses.replace(self.retry_config, backoff_factor=seconds)

    @property
    def retry_config(self) -> RetryConfig:
        """How calls are retried (`nsframe.RetryConfig`)."""
        return self._retry_config

    @retry_config.setter
    def retry_config(self, config: RetryConfig) -> None:
        self._retry_config = config
        self._policy = config.policy()

    def _attempt(self, deadline: float | None) -> exchange.Timeout:
        """This attempt's timeouts, cut to what is left of the call."""
        _, connect, read = self.timeout_config.seconds()
        pool = self.timeout_config.pool_seconds
        if deadline is None:
            return exchange.Timeout(connect, read, pool)
        left = max(deadline - time.monotonic(), 0.001)
        return exchange.Timeout(_least(connect, left), _least(read, left), _least(pool, left))

    def _waited(self, exc: SendError) -> float | None:
        """The limit a failed attempt hit, for its message."""
        total, connect, read = self.timeout_config.seconds()
        return _least(connect if isinstance(exc, exchange.ConnectError) else read, total)

    def _pause(self, delay: float, deadline: float | None) -> bool:
        """Wait ``delay`` before the next attempt; False (no wait) when the wait would
        outlast the call's deadline: a call with timeout=3 never sleeps on Retry-After: 30."""
        # The wait asked for is what must fit the deadline; only then is it capped.
        if deadline is not None and time.monotonic() + delay > deadline:
            return False
        time.sleep(min(delay, MAX_RETRY_DELAY))
        return True

    def call_json(self, method: str, template: str, ident: str | None = None, *,
                  idempotent: bool, **options: Any) -> Any:
        """Send one request; its JSON answer (None for an empty body)."""
        resp = self.request(method, template, ident, idempotent=idempotent, **options)
        return decode_json(resp)

    def post(self, template: str, ident: str, body: dict[str, Any] | None = None, *,
             idempotent: bool, **options: Any) -> Any:
        """POST ``body`` (``{}`` by default) as JSON; the JSON answer."""
        return self.call_json("POST", template, ident, idempotent=idempotent,
                              json=body if body is not None else {}, **options)


def _least(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _next_try(policy: urllib3.Retry, method: str, url: str,
              exc: SendError | None, idempotent: bool) -> urllib3.Retry | None:
    """The retry counter after this failure, or None when the call must not be sent again:
    counts spent, a write that may have reached the server, or a read that timed out
    (the server may still be working on it)."""
    error: Exception | None = None
    if exc is not None:
        if isinstance(exc, exchange.ConnectError):
            error = urllib3.exceptions.ConnectTimeoutError()  # urllib3's "connect" kind
        elif idempotent and isinstance(exc, exchange.ReadError):
            error = urllib3.exceptions.ProtocolError()  # its "read" kind
        else:
            return None
    try:
        return policy.increment(method, url, error=error)
    except urllib3.exceptions.MaxRetryError:
        return None


def netrc_auth(base_url: str) -> dict[str, str]:
    """An ``Authorization`` header from ~/.netrc (``$NETRC``) for the URL's host, as
    requests and curl send; read once per client, not per call."""
    host = urlsplit(base_url).hostname
    path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
    if not host or not os.path.isfile(path):
        return {}
    try:
        found = netrc.netrc(path).authenticators(host)
    except (netrc.NetrcParseError, OSError):
        return {}
    if not found or not found[0]:
        return {}
    pair = f"{found[0]}:{found[2] or ''}".encode("latin-1")
    return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def raise_for_response(resp: Response) -> None:
    """Raise the `APIError` subclass an error answer names; do nothing for 1xx-3xx."""
    if resp.status_code < 400:
        return
    body: dict[str, Any] = {}
    try:
        parsed = resp.json()
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass
    code = body.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = None
    detail = body.get("detail") or body.get("error") or resp.text.strip() or resp.reason
    cls = error_class_for(resp.status_code, code)
    method = resp.request.method
    raise cls(
        str(detail),
        message=client_message(str(detail)),
        method=method,
        instance=_str_or_none(body.get("instance")),
        status=resp.status_code,
        code=code,
        type=_str_or_none(body.get("type")),
        title=_str_or_none(body.get("title")),
        response=resp,
        headers=dict(resp.headers),
        url=resp.url,
        request_id=_request_id(resp),
    )


def _request_id(resp: Response) -> str | None:
    """The id the server logged the request under: the one it answered with (it
    replaces an id it cannot log), else the one sent."""
    answered = resp.headers.get(routes.REQUEST_ID_HEADER)
    if answered:
        return str(answered)
    sent = resp.request.headers.get(routes.REQUEST_ID_HEADER) if resp.request else None
    return str(sent) if sent else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _transport_error(method: str, url: str, exc: SendError,
                     timeout: float | None, *, write: bool) -> TransportError:
    """The error for a request that got no answer. For a write whose request may have
    reached the server (an answer that timed out, a connection dropped after sending),
    it says the write may have been committed, and how to find out."""
    timed_out = isinstance(exc, (exchange.ConnectTimeout, exchange.PoolTimeout,
                                 exchange.ReadTimeout))
    never_sent = isinstance(exc, exchange.ConnectError)
    if write and not never_sent:
        why = f"no answer within {timeout}s" if timed_out \
            else f"the connection broke ({exc})"
        unknown = (
            f"{method} {url} reached the server but got {why}, so the write may have been "
            "committed. Check before sending it again: compare the table's version "
            "(tbl.version) with its version before this write, or look for the rows."
        )
        cls = RequestTimeoutError if timed_out else TransportError
        return cls(unknown)
    if timed_out and never_sent:
        return RequestTimeoutError(
            f"{method} {url} could not connect within {timeout}s: the server is "
            "unreachable or too busy to accept; check the URL, or raise connect_timeout "
            "(nsframe.TimeoutConfig)."
        )
    if timed_out:
        return RequestTimeoutError(
            f"{method} {url} got no answer within {timeout}s: the server is busy or "
            "unreachable; raise timeout= in connect() (or read_timeout in "
            "nsframe.TimeoutConfig) if the work is slow."
        )
    return TransportError(
        f"{method} {url} failed: could not talk to the server ({exc}). "
        "Check the URL and that the server is running."
    )
