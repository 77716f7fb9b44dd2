"""The one place that talks HTTP: one `requests.Session`, URLs, retries, error mapping.

Every REST operation of the contract has one method on `Client`; each returns the decoded
JSON (or Arrow) and raises the `nsframe.exceptions` class the error body names.
"""

from __future__ import annotations

import email.utils
import json as jsonlib
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import requests
import urllib3

from nsframe import _spec
from nsframe._version import __version__
from nsframe.exceptions import (
    NotFoundError,
    RequestTimeoutError,
    ResponseDecodeError,
    TransportError,
    error_class_for,
)

# Told the rows and Arrow bytes of each record batch of a query answer as it is decoded.
BatchCallback = Callable[[int, int], object]

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
RETRY_STATUSES = frozenset({429, 503})
# Never sleep longer than this for one retry, whatever Retry-After says.
MAX_RETRY_DELAY = 30.0


def join_id(parts: Iterable[str], delimiter: str = _spec.DEFAULT_DELIMITER) -> str:
    """The string form of an identifier; no parts is the root namespace."""
    parts = list(parts)
    return delimiter.join(parts) if parts else delimiter


def paged(fetch: Callable[[str | None], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every page of a listing: ``fetch(page_token)`` from no token until the answer
    carries a null, missing or empty ``page_token`` (the spec's end of a listing)."""
    token: str | None = None
    while True:
        page = fetch(token)
        yield page
        token = page.get("page_token") or None
        if token is None:
            return


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


class Client:
    """A thin client for the Namespace and Table REST contract.

    Args:
        base_url: Where the service listens, e.g. ``http://127.0.0.1:2333``.
        api_key: Sent as ``x-api-key``.
        token: Sent as ``Authorization: Bearer <token>``.
        database: Sent as ``x-service-database``.
        headers: Extra headers for every request.
        context: Sent as ``x-service-ctx-<key>`` headers on every request.
        delimiter: The identifier delimiter; sent as ``?delimiter=`` when not ``$``.
        timeout: Seconds to wait for the server (connect and each read).
        retries: How many times an idempotent call is retried on 429/503 or a
            broken connection.
        backoff: First retry delay in seconds; doubled each attempt, with jitter.
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
        delimiter: str = _spec.DEFAULT_DELIMITER,
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
        # Listing page size (the `limit` sent); None lets the server choose.
        self.page_size: int | None = None
        self._has_api_key = api_key is not None
        self._has_token = token is not None
        self._session = requests.Session()
        self._session.headers["User-Agent"] = f"nsframe/{__version__}"
        self._session.headers.update(headers or {})
        if api_key is not None:
            self._session.headers[_spec.API_KEY_HEADER] = api_key
        if token is not None:
            self._session.headers["Authorization"] = f"Bearer {token}"
        if database is not None:
            self._session.headers[_spec.DATABASE_HEADER] = database
        for key, value in self.context.items():
            self._session.headers[_spec.CONTEXT_HEADER_PREFIX + key] = str(value)
        _settle_environment(self._session, self.base_url)

    def __repr__(self) -> str:
        secrets = [name for name, present in (("api_key", self._has_api_key),
                                              ("token", self._has_token)) if present]
        shown = "".join(f", {name}=***" for name in secrets)
        database = f", database={self.database!r}" if self.database else ""
        return f"Client({self.base_url!r}{database}{shown})"

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
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
        url = self.url(template, ident, **(parts or {}))
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        if self.delimiter != _spec.DEFAULT_DELIMITER:
            query["delimiter"] = self.delimiter
        headers = {_spec.REQUEST_ID_HEADER: uuid.uuid4().hex}
        body: bytes | Iterator[bytes] | None = data
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            content_type = _spec.JSON
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
                resp = self._session.request(method, url, params=query, data=body,
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
        resp = self.request(method, template, ident, idempotent=idempotent, **options)
        return decode_json(resp)

    def post(self, template: str, ident: str, body: dict[str, Any] | None = None, *,
             idempotent: bool, **options: Any) -> Any:
        return self.call_json("POST", template, ident, idempotent=idempotent,
                              json=body if body is not None else {}, **options)

    # ------------------------------------------------------------------ namespaces
    def create_namespace(self, ident: str, mode: str = "create",
                         properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"mode": mode}
        if properties:
            body["properties"] = dict(properties)
        return _as_dict(self.post(_spec.NAMESPACE_CREATE, ident, body, idempotent=False))

    def list_namespaces(self, ident: str, page_token: str | None = None,
                        limit: int | None = None) -> dict[str, Any]:
        return _as_dict(self.call_json("GET", _spec.NAMESPACE_LIST, ident, idempotent=True,
                                       params={"page_token": page_token,
                                               "limit": limit or self.page_size}))

    def describe_namespace(self, ident: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.NAMESPACE_DESCRIBE, ident, idempotent=True))

    def namespace_exists(self, ident: str) -> bool:
        return self._exists(_spec.NAMESPACE_EXISTS, ident)

    def drop_namespace(self, ident: str, mode: str = "fail",
                       behavior: str = "restrict") -> dict[str, Any]:
        return _as_dict(self.post(_spec.NAMESPACE_DROP, ident,
                                  {"mode": mode, "behavior": behavior}, idempotent=False))

    # ------------------------------------------------------------------ tables
    def list_tables(self, namespace: str, page_token: str | None = None,
                    limit: int | None = None) -> dict[str, Any]:
        return _as_dict(self.call_json("GET", _spec.NAMESPACE_TABLE_LIST, namespace,
                                       idempotent=True,
                                       params={"page_token": page_token,
                                               "limit": limit or self.page_size}))

    def list_all_tables(self, page_token: str | None = None,
                        limit: int | None = None) -> dict[str, Any]:
        return _as_dict(self.call_json("GET", _spec.TABLE_LIST_ALL, idempotent=True,
                                       params={"page_token": page_token,
                                               "limit": limit or self.page_size}))

    def create_table(self, ident: str, stream: Iterator[bytes], mode: str = "create",
                     properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        params = {"mode": mode,
                  "properties": jsonlib.dumps(dict(properties)) if properties else None}
        return _as_dict(self.call_json("POST", _spec.TABLE_CREATE, ident, idempotent=False,
                                       params=params, data=stream,
                                       content_type=_spec.ARROW_STREAM))

    def declare_table(self, ident: str,
                      properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        body = {"properties": dict(properties)} if properties else {}
        return _as_dict(self.post(_spec.TABLE_DECLARE, ident, body, idempotent=False))

    def describe_table(self, ident: str, *, version: int | None = None,
                       branch: str | None = None) -> dict[str, Any]:
        body = _compact(version=version, branch=branch)
        # Upstream servers send the version and schema only when asked for details.
        return _as_dict(self.post(_spec.TABLE_DESCRIBE, ident, body, idempotent=True,
                                  params={"load_detailed_metadata": True}))

    def table_exists(self, ident: str) -> bool:
        return self._exists(_spec.TABLE_EXISTS, ident)

    def drop_table(self, ident: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.TABLE_DROP, ident, idempotent=False))

    def count_rows(self, ident: str, *, predicate: str | None = None,
                   version: int | None = None, branch: str | None = None) -> int:
        body = _compact(predicate=predicate, version=version, branch=branch)
        answer = self.post(_spec.TABLE_COUNT_ROWS, ident, body, idempotent=True)
        # The contract answers a bare integer; the reference server wraps it in {"count": n}.
        if isinstance(answer, dict):
            answer = answer.get("count")
        if not isinstance(answer, int) or isinstance(answer, bool):
            raise ResponseDecodeError(f"count_rows of {ident!r} answered {answer!r}, "
                                      "not an integer.")
        return answer

    def insert(self, ident: str, stream: Iterator[bytes], *, mode: str = "append",
               branch: str | None = None) -> dict[str, Any]:
        return _as_dict(self.call_json("POST", _spec.TABLE_INSERT, ident, idempotent=False,
                                       params={"mode": mode, "branch": branch}, data=stream,
                                       content_type=_spec.ARROW_STREAM))

    def delete(self, ident: str, predicate: str, *, branch: str | None = None) -> dict[str, Any]:
        body = _compact(predicate=predicate, branch=branch)
        return _as_dict(self.post(_spec.TABLE_DELETE, ident, body, idempotent=False))

    def table_stats(self, ident: str, *, branch: str | None = None) -> dict[str, Any]:
        """``GetTableStats``: bytes, rows, index count and fragment statistics."""
        return _as_dict(self.post(_spec.TABLE_STATS, ident, _compact(branch=branch),
                                  idempotent=True))

    def query(self, ident: str, body: dict[str, Any], *,
              on_batch: BatchCallback | None = None) -> pa.Table:
        """The result table; ``on_batch(rows, nbytes)`` is called as record batches arrive."""
        # Streamed, so that a large result is read in one call rather than in requests'
        # 10 KiB chunks.
        resp = self.request("POST", _spec.TABLE_QUERY, ident, idempotent=True, json=body,
                            stream=True)
        return decode_arrow(resp, on_batch=on_batch)

    # ------------------------------------------------------------------ indexes
    def create_index(self, ident: str, body: dict[str, Any], *,
                     scalar: bool = False) -> dict[str, Any]:
        template = _spec.INDEX_CREATE_SCALAR if scalar else _spec.INDEX_CREATE
        return _as_dict(self.post(template, ident, body, idempotent=False))

    def list_indices(self, ident: str, *, version: int | None = None,
                     branch: str | None = None, page_token: str | None = None,
                     limit: int | None = None) -> dict[str, Any]:
        # The paging members travel in the body here (upstream ListTableIndicesRequest).
        body = _compact(version=version, branch=branch, page_token=page_token,
                        limit=limit or self.page_size)
        return _as_dict(self.post(_spec.INDEX_LIST, ident, body, idempotent=True))

    def index_stats(self, ident: str, index_name: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.INDEX_STATS, ident, idempotent=True,
                                  parts={"index_name": index_name}))

    def drop_index(self, ident: str, index_name: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.INDEX_DROP, ident, idempotent=False,
                                  parts={"index_name": index_name}))

    # ------------------------------------------------------------------ versions
    def list_versions(self, ident: str, *, branch: str | None = None,
                      page_token: str | None = None, limit: int | None = None) -> dict[str, Any]:
        params = {"branch": branch, "page_token": page_token, "limit": limit or self.page_size}
        return _as_dict(self.post(_spec.VERSION_LIST, ident, idempotent=True, params=params))

    def describe_version(self, ident: str, *, version: int | None = None,
                         branch: str | None = None) -> dict[str, Any]:
        """One version of a table (the latest of ``branch`` when ``version`` is None)."""
        body = _compact(version=version, branch=branch)
        return _as_dict(self.post(_spec.VERSION_DESCRIBE, ident, body, idempotent=True))

    def restore(self, ident: str, version: int, *, branch: str | None = None) -> dict[str, Any]:
        body = _compact(version=version, branch=branch)
        return _as_dict(self.post(_spec.RESTORE, ident, body, idempotent=False))

    def optimize(self, ident: str, body: dict[str, Any]) -> dict[str, Any]:
        """nsframe's extension: compact fragments and refresh indexes."""
        return _as_dict(self.post(_spec.TABLE_OPTIMIZE, ident, body, idempotent=False))

    def list_tags(self, ident: str, *, page_token: str | None = None,
                  limit: int | None = None) -> dict[str, Any]:
        params = {"page_token": page_token, "limit": limit or self.page_size}
        return _as_dict(self.post(_spec.TAGS_LIST, ident, idempotent=True, params=params))

    def create_tag(self, ident: str, tag: str, version: int, *,
                   branch: str | None = None) -> dict[str, Any]:
        body = _compact(tag=tag, version=version, branch=branch)
        return _as_dict(self.post(_spec.TAGS_CREATE, ident, body, idempotent=False))

    def update_tag(self, ident: str, tag: str, version: int, *,
                   branch: str | None = None) -> dict[str, Any]:
        body = _compact(tag=tag, version=version, branch=branch)
        return _as_dict(self.post(_spec.TAGS_UPDATE, ident, body, idempotent=False))

    def delete_tag(self, ident: str, tag: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.TAGS_DELETE, ident, {"tag": tag}, idempotent=False))

    def tag_version(self, ident: str, tag: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.TAGS_VERSION, ident, {"tag": tag}, idempotent=True))

    def list_branches(self, ident: str, *, page_token: str | None = None,
                      limit: int | None = None) -> dict[str, Any]:
        params = {"page_token": page_token, "limit": limit or self.page_size}
        return _as_dict(self.post(_spec.BRANCHES_LIST, ident, idempotent=True, params=params))

    def create_branch(self, ident: str, name: str, *, from_branch: str | None = None,
                      from_version: int | None = None) -> dict[str, Any]:
        body = _compact(name=name, from_branch=from_branch, from_version=from_version)
        return _as_dict(self.post(_spec.BRANCHES_CREATE, ident, body, idempotent=False))

    def delete_branch(self, ident: str, name: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.BRANCHES_DELETE, ident, {"name": name},
                                  idempotent=False))

    def describe_transaction(self, transaction_id: str) -> dict[str, Any]:
        return _as_dict(self.post(_spec.TRANSACTION_DESCRIBE, transaction_id, idempotent=True))

    # ------------------------------------------------------------------ extended deployment
    def list_database_tables(self, page_token: str | None = None,
                             limit: int | None = None) -> dict[str, Any]:
        """The extended deployment's ``GET /v1/tables``: the tables of the database that
        ``x-service-database`` (or the host name) selects."""
        return _as_dict(self.call_json("GET", _spec.EXT_TABLES_LIST, idempotent=True,
                                       params={"page_token": page_token,
                                               "limit": limit or self.page_size}))

    def create_database_table(self, table_name: str,
                              stream: Iterator[bytes] | None = None) -> dict[str, Any]:
        """The extended deployment's ``POST /v1/tables/<table_name>``: create a table from
        an Arrow IPC stream; with no ``stream``, the request has no body (which declares
        the table on nsframe's server)."""
        return _as_dict(self.call_json("POST", _spec.EXT_TABLE_CREATE, idempotent=False,
                                       parts={"table_name": table_name},
                                       data=stream if stream is not None else b"",
                                       content_type=_spec.ARROW_STREAM))

    # ------------------------------------------------------------------ helpers
    def _exists(self, template: str, ident: str) -> bool:
        try:
            self.request("POST", template, ident, idempotent=True, json={})
        except NotFoundError:
            return False
        return True


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


def _compact(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None}


def _as_dict(answer: Any) -> dict[str, Any]:
    # 204 and other empty answers decode to None.
    if answer is None:
        return {}
    if not isinstance(answer, dict):
        raise ResponseDecodeError(f"Expected a JSON object from the server, got {answer!r}.")
    return answer


def decode_json(resp: requests.Response) -> Any:
    """The JSON of a 2xx answer; ``None`` for an empty body."""
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError as exc:
        raise ResponseDecodeError(
            f"{resp.request.method} {resp.url} answered {resp.status_code} with a body that "
            f"is not JSON: {resp.text[:200]!r}"
        ) from exc


ARROW_FILE_MAGIC = b"ARROW1"
# Bodies up to this size (with a declared length) are read in one call: decoding them
# as they arrive takes more reads than it saves.
WHOLE_READ_BYTES = 4 << 20


def decode_arrow(resp: requests.Response, *,
                 on_batch: BatchCallback | None = None) -> pa.Table:
    """An Arrow IPC file body (or a stream, which some servers send) as a table.

    A file is decoded while it arrives: after its 8-byte preamble comes an IPC stream
    (then the footer), so each batch is read straight off the connection into the
    memory Arrow keeps, with no copy of the whole body. A small body of known length,
    and anything unexpected, is read whole instead.

    ``on_batch(rows, nbytes)`` is told each batch decoded while the body arrives, and
    what remains once when the body is read whole.
    """
    tally = _Tally(on_batch) if on_batch is not None else None
    body = _RecordingReader(resp)
    length = resp.headers.get("Content-Length", "")
    small = length.isdigit() and int(length) <= WHOLE_READ_BYTES
    try:
        head = b"" if small else body.read(8)
        if head[:6] == ARROW_FILE_MAGIC:
            try:
                table = _read_stream(pa.ipc.open_stream(body), tally)
                tail = body.read()
                if len(tail) >= 10 and tail.endswith(ARROW_FILE_MAGIC):
                    return table
            except (pa.ArrowException, OSError) as exc:
                body.raise_broken(resp, exc)
            # Not the layout expected (a writer without the end-of-stream marker, or a
            # body cut short): decode whatever arrived as a whole file.
        content = body.everything()
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise TransportError(f"The answer of {resp.url} broke off: {exc}") from exc
    finally:
        resp.close()
    buffer = pa.py_buffer(content)
    try:
        if content[:6] == ARROW_FILE_MAGIC:
            whole = pa.ipc.open_file(buffer).read_all()
        else:
            whole = pa.ipc.open_stream(buffer).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise ResponseDecodeError(
            f"{resp.request.method} {resp.url} answered {resp.status_code} with a body that is "
            f"not Arrow IPC ({exc})."
        ) from exc
    if tally is not None:
        tally.rest(whole)
    return whole


class _Tally:
    """Tells ``on_batch`` each batch decoded, and keeps the totals told so far."""

    def __init__(self, on_batch: BatchCallback) -> None:
        self._on_batch = on_batch
        self.rows = 0
        self.nbytes = 0

    def __call__(self, rows: int, nbytes: int) -> None:
        self.rows += rows
        self.nbytes += nbytes
        self._on_batch(rows, nbytes)

    def rest(self, whole: pa.Table) -> None:
        """Tell what ``whole`` holds beyond what was told while it streamed."""
        self(max(0, whole.num_rows - self.rows), max(0, whole.nbytes - self.nbytes))


def _read_stream(reader: pa.ipc.RecordBatchStreamReader, tally: _Tally | None) -> pa.Table:
    """The stream's batches as one table, each told as it is read."""
    if tally is None:
        return reader.read_all()
    batches = []
    for batch in reader:
        batches.append(batch)
        tally(batch.num_rows, batch.nbytes)
    return pa.Table.from_batches(batches, schema=reader.schema)


class _RecordingReader:
    """A blocking file over a response body that remembers what it handed out, so that
    a failed streaming decode can start again from the first byte."""

    def __init__(self, resp: requests.Response) -> None:
        self._resp = resp
        self._seen: list[bytes] = []
        self.closed = False

    def read(self, size: int | None = -1) -> bytes:
        raw = self._resp.raw
        if raw is None:
            data = b"" if self._seen else self._resp.content
        elif size is None or size < 0:
            data = raw.read(decode_content=True)
        else:
            # A read may come back short at a chunk boundary: Arrow wants all of it.
            data = raw.read(size, decode_content=True)
            while len(data) < size:
                more = raw.read(size - len(data), decode_content=True)
                if not more:
                    break
                data += more
        self._seen.append(data)
        return data

    def everything(self) -> bytes:
        """The whole body: what was read so far and the rest."""
        self.read()
        return b"".join(self._seen)

    def raise_broken(self, resp: requests.Response, exc: BaseException) -> None:
        """Re-raise a connection failure that surfaced inside pyarrow as one."""
        cause = exc.__context__ or exc.__cause__
        if isinstance(cause, (urllib3.exceptions.HTTPError, requests.RequestException)):
            raise TransportError(f"The answer of {resp.url} broke off: {cause}") from cause


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
    method = resp.request.method if resp.request is not None else "?"
    raise cls(
        str(detail),
        instance=_str_or_none(body.get("instance")),
        status=resp.status_code,
        code=code,
        type=_str_or_none(body.get("type")),
        title=_str_or_none(body.get("title")),
        response=resp,
        headers=dict(resp.headers),
        url=f"{method} {resp.url}",
        request_id=resp.request.headers.get(_spec.REQUEST_ID_HEADER) if resp.request else None,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

