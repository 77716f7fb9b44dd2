"""The one place that talks HTTP: one `requests.Session`, URLs, timeouts, retries and the
mapping of error answers onto `nsframe.exceptions`."""

from __future__ import annotations

import dataclasses
import email.utils
import json as jsonlib
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import requests
import urllib3

from nsframe._client.config import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_RETRY_DELAY,
    RetryConfig,
    TimeoutConfig,
)
from nsframe._client.config import retry_config as _retry_config
from nsframe._client.config import timeout_config as _timeout_config
from nsframe._client.fastpath import FastPath, Sender
from nsframe._client.hints import client_message
from nsframe._client.wire import decode_json
from nsframe._protocol import routes
from nsframe._protocol.ids import DEFAULT_DELIMITER
from nsframe._version import __version__
from nsframe.exceptions import (
    ConnectionClosedError,
    RequestTimeoutError,
    TransportError,
    error_class_for,
)

# Per attempt: (connect, read) seconds, None for no limit; what requests takes.
AttemptTimeout = tuple[float | None, float | None]

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
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string, such as '$'.")
        if isinstance(retries, int) and not isinstance(retries, bool) and retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}.")
        self.base_url = base_url.rstrip("/")
        self.database = database
        self.delimiter = delimiter
        self.retry_config = _retry_config(retry_config, retries, backoff)
        self.timeout_config = _timeout_config(timeout_config, timeout)
        self.context = dict(context or {})
        self.closed = False
        self._has_api_key = api_key is not None
        self._has_token = token is not None
        self._session = requests.Session()
        self._session.headers["User-Agent"] = f"nsframe/{__version__}"
        self._session.headers.update(headers or {})
        if api_key is not None:
            self._session.headers[routes.API_KEY_HEADER] = api_key
        if token is not None:
            self._session.headers["Authorization"] = f"Bearer {token}"
        if database is not None:
            self._session.headers[routes.DATABASE_HEADER] = database
        for key, value in self.context.items():
            self._session.headers[routes.CONTEXT_HEADER_PREFIX + key] = str(value)
        _settle_environment(self._session, self.base_url)
        # What sends each request: urllib3's pool directly where the session allows it.
        self._sender: Sender = FastPath.for_session(self._session, self.base_url) \
            or self._session

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
        self._session.close()

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
    ) -> requests.Response:
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
        headers = {routes.REQUEST_ID_HEADER: uuid.uuid4().hex}
        body: bytes | Iterator[bytes] | None = data
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            content_type = routes.JSON
        if content_type:
            headers["Content-Type"] = content_type
        limit = self.timeout_config.seconds()[0]
        deadline = None if limit is None else time.monotonic() + limit
        policy = self._policy
        fresh_retry = idempotent
        while True:
            try:
                resp = self._sender.request(method, url, params=query, data=body,
                                            headers=headers, timeout=self._attempt(deadline),
                                            stream=stream)
            except requests.RequestException as exc:
                if fresh_retry and _dropped(exc):
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

    def _attempt(self, deadline: float | None) -> AttemptTimeout:
        """This attempt's (connect, read) timeouts, cut to what is left of the call."""
        _, connect, read = self.timeout_config.seconds()
        if deadline is None:
            return connect, read
        left = max(deadline - time.monotonic(), 0.001)
        return _least(connect, left), _least(read, left)

    def _waited(self, exc: requests.RequestException) -> float | None:
        """The limit a failed attempt hit, for its message."""
        total, connect, read = self.timeout_config.seconds()
        return _least(connect if _never_sent(exc) else read, total)

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
              exc: requests.RequestException | None, idempotent: bool) -> urllib3.Retry | None:
    """The retry counter after this failure, or None when the call must not be sent again:
    counts spent, a write that may have reached the server, or a read that timed out
    (the server may still be working on it)."""
    error: Exception | None = None
    if exc is not None:
        if _never_sent(exc):
            error = urllib3.exceptions.ConnectTimeoutError()  # urllib3's "connect" kind
        elif idempotent and _dropped(exc):
            error = urllib3.exceptions.ProtocolError()  # its "read" kind
        else:
            return None
    try:
        return policy.increment(method, url, error=error)
    except urllib3.exceptions.MaxRetryError:
        return None


def _settle_environment(session: requests.Session, base_url: str) -> None:
    """Read proxies, CA bundle and ~/.netrc once, instead of on every request.

    requests scans the whole environment (and reads ~/.netrc) per call when
    ``trust_env`` is on: about 0.2 ms of a 1 ms round trip. Every URL of a client has
    the same scheme and host, so the answer is the same each time.
    """
    settings = session.merge_environment_settings(base_url, {}, None, None, None)
    netrc = requests.utils.get_netrc_auth(base_url) if "Authorization" not in session.headers \
        else None
    session.trust_env = False
    session.proxies = dict(settings["proxies"])
    session.verify = settings["verify"]
    if netrc is not None:
        session.auth = netrc


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def raise_for_response(resp: requests.Response) -> None:
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
    method = resp.request.method if resp.request is not None else None
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


def _request_id(resp: requests.Response) -> str | None:
    """The id the server logged the request under: the one it answered with (it
    replaces an id it cannot log), else the one sent."""
    answered = resp.headers.get(routes.REQUEST_ID_HEADER)
    if answered:
        return str(answered)
    sent = resp.request.headers.get(routes.REQUEST_ID_HEADER) if resp.request else None
    return str(sent) if sent else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _never_sent(exc: requests.RequestException) -> bool:
    """True when the request failed before any of it reached the server (it could not
    connect): a write then certainly did nothing."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)  # urllib3's MaxRetryError wraps the cause
    return isinstance(reason, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError too


def _dropped(exc: requests.RequestException) -> bool:
    """A connection that broke before a whole answer came, once it was made (not a
    timeout): also one cut off mid-answer, as when the worker serving it dies."""
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return True
    return isinstance(exc, requests.ConnectionError) and not isinstance(exc, requests.Timeout) \
        and not _never_sent(exc)


def _transport_error(method: str, url: str, exc: requests.RequestException,
                     timeout: float | None, *, write: bool) -> TransportError:
    """The error for a request that got no answer. For a write whose request may have
    reached the server (an answer that timed out, a connection dropped after sending),
    it says the write may have been committed, and how to find out."""
    if write and not _never_sent(exc):
        why = f"no answer within {timeout}s" if isinstance(exc, requests.Timeout) \
            else f"the connection broke ({exc})"
        unknown = (
            f"{method} {url} reached the server but got {why}, so the write may have been "
            "committed. Check before sending it again: compare the table's version "
            "(tbl.version) with its version before this write, or look for the rows."
        )
        cls = RequestTimeoutError if isinstance(exc, requests.Timeout) else TransportError
        return cls(unknown)
    if isinstance(exc, requests.Timeout) and _never_sent(exc):
        return RequestTimeoutError(
            f"{method} {url} could not connect within {timeout}s: the server is "
            "unreachable or too busy to accept; check the URL, or raise connect_timeout "
            "(nsframe.TimeoutConfig)."
        )
    if isinstance(exc, requests.Timeout):
        return RequestTimeoutError(
            f"{method} {url} got no answer within {timeout}s: the server is busy or "
            "unreachable; raise timeout= in connect() (or read_timeout in "
            "nsframe.TimeoutConfig) if the work is slow."
        )
    return TransportError(
        f"{method} {url} failed: could not talk to the server ({exc}). "
        "Check the URL and that the server is running."
    )
