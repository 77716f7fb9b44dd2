"""The one place that talks HTTP: one `requests.Session`, URLs, timeouts, retries and the
mapping of error answers onto `nsframe.exceptions`."""

from __future__ import annotations

import email.utils
import json as jsonlib
import random
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import requests
import urllib3

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

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
RETRY_STATUSES = frozenset({429, 503})
# Never sleep longer than this for one retry, whatever Retry-After says.
MAX_RETRY_DELAY = 30.0

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
        backoff: float = 0.25,
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string, such as '$'.")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}.")
        self.base_url = base_url.rstrip("/")
        self.database = database
        self.delimiter = delimiter
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
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
        headers = {routes.REQUEST_ID_HEADER: uuid.uuid4().hex}
        body: bytes | Iterator[bytes] | None = data
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            content_type = routes.JSON
        if content_type:
            headers["Content-Type"] = content_type
        attempts = self.retries + 1 if idempotent else 1
        # Waits between attempts come out of the call's own timeout (see `_pause`).
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        fresh_retry = idempotent
        attempt = 0
        while True:
            last = attempt >= attempts - 1
            try:
                resp = self._sender.request(method, url, params=query, data=body,
                                            headers=headers, timeout=self.timeout,
                                            stream=stream)
            except requests.RequestException as exc:
                if fresh_retry and _dropped(exc):
                    # Most often a keep-alive connection the server had closed: a read is
                    # sent again at once, once, on a fresh connection, whatever `retries`.
                    fresh_retry = False
                    continue
                # A connection that failed (or broke) is retried; a slow answer is not,
                # since the server may still be working on it.
                if isinstance(exc, requests.ConnectionError) and not last \
                        and self._pause(attempt, None, deadline):
                    attempt += 1
                    continue
                raise _transport_error(method, url, exc, self.timeout,
                                       write=not idempotent) from exc
            if resp.status_code in RETRY_STATUSES and not last and self._pause(
                    attempt, retry_after(resp.headers.get("Retry-After")), deadline):
                resp.close()
                attempt += 1
                continue
            raise_for_response(resp)
            return resp

    def _pause(self, attempt: int, hinted: float | None, deadline: float | None) -> bool:
        """Wait before attempt ``attempt + 1``; False (no wait) when the wait would outlast
        the call's timeout: a call with timeout=3 never sleeps 30 s on a Retry-After."""
        if hinted is not None:
            delay = hinted
        else:
            delay = self.backoff * (2 ** attempt) * (0.5 + random.random())
        delay = min(delay, MAX_RETRY_DELAY)
        if deadline is not None and time.monotonic() + delay > deadline:
            return False
        time.sleep(delay)
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
        request_id=resp.request.headers.get(routes.REQUEST_ID_HEADER) if resp.request else None,
    )


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
    """A connection that broke before an answer came, once it was made (not a timeout)."""
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
    if isinstance(exc, requests.Timeout):
        return RequestTimeoutError(
            f"{method} {url} got no answer within {timeout}s: the server is busy or "
            "unreachable; raise timeout= in connect() if the work is slow."
        )
    return TransportError(
        f"{method} {url} failed: could not talk to the server ({exc}). "
        "Check the URL and that the server is running."
    )
