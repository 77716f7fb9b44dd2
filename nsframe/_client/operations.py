"""`Client`: one method per REST operation of the contract, on top of `Transport`."""

from __future__ import annotations

import json as jsonlib
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from nsframe._client.changes import ChangeOperations
from nsframe._client.wire import BatchCallback, as_dict, decode_arrow
from nsframe._protocol import routes
from nsframe.exceptions import NotFoundError, ResponseDecodeError


class Client(ChangeOperations):
    """A thin client for the Namespace and Table REST contract.

    Args:
        base_url: Where the service listens, e.g. ``http://127.0.0.1:2333``.
        api_key: Sent as ``x-api-key``.
        token: Sent as ``Authorization: Bearer <token>``.
        database: Sent as ``x-service-database``.
        headers: Extra headers for every request.
        context: Sent as ``x-service-ctx-<key>`` headers on every request.
        delimiter: The identifier delimiter; sent as ``?delimiter=`` when not ``$``.
        timeout: Shorthand for ``TimeoutConfig(timeout=t, connect_timeout=t,
            read_timeout=t)``.
        retries: Shorthand for ``RetryConfig(retries=n)``.
        backoff: Shorthand for ``RetryConfig(backoff_factor=...)``, with ``retries``.
        retry_config: How calls are retried (`nsframe.RetryConfig`).
        timeout_config: How long calls wait (`nsframe.TimeoutConfig`).
        transport: What carries each request (`nsframe.transport.Transport`); default a
            new `nsframe.transport.HTTPTransport`.

    Each method returns the decoded JSON answer (an Arrow table for `query`) and raises
    the `nsframe.exceptions` class the error body names. The operations that change
    tables in place, rename or register them come from `ChangeOperations`.
    """

    # Listing page size (the `limit` sent); None lets the server choose.
    page_size: int | None = None

    # ------------------------------------------------------------------ namespaces
    def create_namespace(self, ident: str, mode: str = "create",
                         properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"mode": mode}
        if properties:
            body["properties"] = dict(properties)
        return as_dict(self.post(routes.NAMESPACE_CREATE, ident, body, idempotent=False))

    def list_namespaces(self, ident: str, page_token: str | None = None,
                        limit: int | None = None) -> dict[str, Any]:
        return as_dict(self.call_json("GET", routes.NAMESPACE_LIST, ident, idempotent=True,
                                      params={"page_token": page_token,
                                              "limit": limit or self.page_size}))

    def describe_namespace(self, ident: str) -> dict[str, Any]:
        return as_dict(self.post(routes.NAMESPACE_DESCRIBE, ident, idempotent=True))

    def namespace_exists(self, ident: str) -> bool:
        return self._exists(routes.NAMESPACE_EXISTS, ident)

    def drop_namespace(self, ident: str, mode: str = "fail",
                       behavior: str = "restrict") -> dict[str, Any]:
        return as_dict(self.post(routes.NAMESPACE_DROP, ident,
                                 {"mode": mode, "behavior": behavior}, idempotent=False))

    # ------------------------------------------------------------------ tables
    def list_tables(self, namespace: str, page_token: str | None = None,
                    limit: int | None = None) -> dict[str, Any]:
        return as_dict(self.call_json("GET", routes.NAMESPACE_TABLE_LIST, namespace,
                                      idempotent=True,
                                      params={"page_token": page_token,
                                              "limit": limit or self.page_size}))

    def list_all_tables(self, page_token: str | None = None,
                        limit: int | None = None) -> dict[str, Any]:
        return as_dict(self.call_json("GET", routes.TABLE_LIST_ALL, idempotent=True,
                                      params={"page_token": page_token,
                                              "limit": limit or self.page_size}))

    def create_table(self, ident: str, stream: Iterator[bytes], mode: str = "create",
                     properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        params = {"mode": mode,
                  "properties": jsonlib.dumps(dict(properties)) if properties else None}
        return as_dict(self.call_json("POST", routes.TABLE_CREATE, ident, idempotent=False,
                                      params=params, data=stream,
                                      content_type=routes.ARROW_STREAM))

    def declare_table(self, ident: str,
                      properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        body = {"properties": dict(properties)} if properties else {}
        return as_dict(self.post(routes.TABLE_DECLARE, ident, body, idempotent=False))

    def describe_table(self, ident: str, *, version: int | None = None,
                       branch: str | None = None) -> dict[str, Any]:
        body = _compact(version=version, branch=branch)
        # Upstream servers send the version and schema only when asked for details.
        return as_dict(self.post(routes.TABLE_DESCRIBE, ident, body, idempotent=True,
                                 params={"load_detailed_metadata": True}))

    def table_exists(self, ident: str) -> bool:
        return self._exists(routes.TABLE_EXISTS, ident)

    def drop_table(self, ident: str) -> dict[str, Any]:
        return as_dict(self.post(routes.TABLE_DROP, ident, idempotent=False))

    def count_rows(self, ident: str, *, predicate: str | None = None,
                   version: int | None = None, branch: str | None = None) -> int:
        body = _compact(predicate=predicate, version=version, branch=branch)
        answer = self.post(routes.TABLE_COUNT_ROWS, ident, body, idempotent=True)
        # The contract answers a bare integer; the reference server wraps it in {"count": n}.
        if isinstance(answer, dict):
            answer = answer.get("count")
        if not isinstance(answer, int) or isinstance(answer, bool):
            raise ResponseDecodeError(f"count_rows of {ident!r} answered {answer!r}, "
                                      "not an integer.")
        return answer

    def insert(self, ident: str, stream: Iterator[bytes], *, mode: str = "append",
               branch: str | None = None) -> dict[str, Any]:
        return as_dict(self.call_json("POST", routes.TABLE_INSERT, ident, idempotent=False,
                                      params={"mode": mode, "branch": branch}, data=stream,
                                      content_type=routes.ARROW_STREAM))

    def delete(self, ident: str, predicate: str, *, branch: str | None = None) -> dict[str, Any]:
        body = _compact(predicate=predicate, branch=branch)
        return as_dict(self.post(routes.TABLE_DELETE, ident, body, idempotent=False))

    def table_stats(self, ident: str, *, branch: str | None = None) -> dict[str, Any]:
        """``GetTableStats``: bytes, rows, index count and fragment statistics."""
        return as_dict(self.post(routes.TABLE_STATS, ident, _compact(branch=branch),
                                 idempotent=True))

    def query(self, ident: str, body: dict[str, Any], *,
              on_batch: BatchCallback | None = None) -> pa.Table:
        """The result table; ``on_batch(rows, nbytes)`` is called as record batches arrive."""
        return self.query_with_version(ident, body, on_batch=on_batch)[0]

    def query_with_version(self, ident: str, body: dict[str, Any], *,
                           on_batch: BatchCallback | None = None) -> tuple[pa.Table, int | None]:
        """The result table and the table version its rows reflect, when the server says
        (``x-lancedb-version``: nsframe's and LanceDB's servers do, the reference does not)."""
        # Streamed, so that a large result is read in one call rather than in requests'
        # 10 KiB chunks.
        resp = self.request("POST", routes.TABLE_QUERY, ident, idempotent=True, json=body,
                            stream=True)
        version = resp.headers.get(routes.READ_VERSION_HEADER, "")
        table = decode_arrow(resp, on_batch=on_batch)
        return table, int(version) if version.isdigit() else None

    # ------------------------------------------------------------------ indexes
    def create_index(self, ident: str, body: dict[str, Any], *,
                     scalar: bool = False) -> dict[str, Any]:
        template = routes.INDEX_CREATE_SCALAR if scalar else routes.INDEX_CREATE
        return as_dict(self.post(template, ident, body, idempotent=False))

    def list_indices(self, ident: str, *, version: int | None = None,
                     branch: str | None = None, page_token: str | None = None,
                     limit: int | None = None) -> dict[str, Any]:
        # The paging members travel in the body here (upstream ListTableIndicesRequest).
        body = _compact(version=version, branch=branch, page_token=page_token,
                        limit=limit or self.page_size)
        return as_dict(self.post(routes.INDEX_LIST, ident, body, idempotent=True))

    def index_stats(self, ident: str, index_name: str) -> dict[str, Any]:
        return as_dict(self.post(routes.INDEX_STATS, ident, idempotent=True,
                                 parts={"index_name": index_name}))

    def drop_index(self, ident: str, index_name: str) -> dict[str, Any]:
        return as_dict(self.post(routes.INDEX_DROP, ident, idempotent=False,
                                 parts={"index_name": index_name}))

    # ------------------------------------------------------------------ versions
    def list_versions(self, ident: str, *, branch: str | None = None,
                      page_token: str | None = None, limit: int | None = None) -> dict[str, Any]:
        params = {"branch": branch, "page_token": page_token, "limit": limit or self.page_size}
        return as_dict(self.post(routes.VERSION_LIST, ident, idempotent=True, params=params))

    def describe_version(self, ident: str, *, version: int | None = None,
                         branch: str | None = None) -> dict[str, Any]:
        """One version of a table (the latest of ``branch`` when ``version`` is None)."""
        body = _compact(version=version, branch=branch)
        return as_dict(self.post(routes.VERSION_DESCRIBE, ident, body, idempotent=True))

    def restore(self, ident: str, version: int, *, branch: str | None = None) -> dict[str, Any]:
        body = _compact(version=version, branch=branch)
        return as_dict(self.post(routes.RESTORE, ident, body, idempotent=False))

    def optimize(self, ident: str, body: dict[str, Any]) -> dict[str, Any]:
        """nsframe's extension: compact fragments and refresh indexes."""
        return as_dict(self.post(routes.TABLE_OPTIMIZE, ident, body, idempotent=False))

    def list_tags(self, ident: str, *, page_token: str | None = None,
                  limit: int | None = None) -> dict[str, Any]:
        params = {"page_token": page_token, "limit": limit or self.page_size}
        return as_dict(self.post(routes.TAGS_LIST, ident, idempotent=True, params=params))

    def create_tag(self, ident: str, tag: str, version: int, *,
                   branch: str | None = None) -> dict[str, Any]:
        body = _compact(tag=tag, version=version, branch=branch)
        return as_dict(self.post(routes.TAGS_CREATE, ident, body, idempotent=False))

    def update_tag(self, ident: str, tag: str, version: int, *,
                   branch: str | None = None) -> dict[str, Any]:
        body = _compact(tag=tag, version=version, branch=branch)
        return as_dict(self.post(routes.TAGS_UPDATE, ident, body, idempotent=False))

    def delete_tag(self, ident: str, tag: str) -> dict[str, Any]:
        return as_dict(self.post(routes.TAGS_DELETE, ident, {"tag": tag}, idempotent=False))

    def tag_version(self, ident: str, tag: str) -> dict[str, Any]:
        return as_dict(self.post(routes.TAGS_VERSION, ident, {"tag": tag}, idempotent=True))

    def list_branches(self, ident: str, *, page_token: str | None = None,
                      limit: int | None = None) -> dict[str, Any]:
        params = {"page_token": page_token, "limit": limit or self.page_size}
        return as_dict(self.post(routes.BRANCHES_LIST, ident, idempotent=True, params=params))

    def create_branch(self, ident: str, name: str, *, from_branch: str | None = None,
                      from_version: int | None = None) -> dict[str, Any]:
        body = _compact(name=name, from_branch=from_branch, from_version=from_version)
        return as_dict(self.post(routes.BRANCHES_CREATE, ident, body, idempotent=False))

    def delete_branch(self, ident: str, name: str) -> dict[str, Any]:
        return as_dict(self.post(routes.BRANCHES_DELETE, ident, {"name": name},
                                 idempotent=False))

    def describe_transaction(self, transaction_id: str) -> dict[str, Any]:
        return as_dict(self.post(routes.TRANSACTION_DESCRIBE, transaction_id, idempotent=True))

    # ------------------------------------------------------------------ extended deployment
    def list_database_tables(self, page_token: str | None = None,
                             limit: int | None = None) -> dict[str, Any]:
        """The extended deployment's ``GET /v1/tables``: the tables of the database that
        ``x-service-database`` (or the host name) selects."""
        return as_dict(self.call_json("GET", routes.EXT_TABLES_LIST, idempotent=True,
                                      params={"page_token": page_token,
                                              "limit": limit or self.page_size}))

    def create_database_table(self, table_name: str,
                              stream: Iterator[bytes] | None = None) -> dict[str, Any]:
        """The extended deployment's ``POST /v1/tables/<table_name>``: create a table from
        an Arrow IPC stream; with no ``stream``, the request has no body (which declares
        the table on nsframe's server)."""
        return as_dict(self.call_json("POST", routes.EXT_TABLE_CREATE, idempotent=False,
                                      parts={"table_name": table_name},
                                      data=stream if stream is not None else b"",
                                      content_type=routes.ARROW_STREAM))

    # ------------------------------------------------------------------ helpers
    def _exists(self, template: str, ident: str) -> bool:
        try:
            self.request("POST", template, ident, idempotent=True, json={})
        except NotFoundError:
            return False
        return True


def _compact(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None}
