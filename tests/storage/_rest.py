"""HTTP calls to a server under test, and Arrow bodies of known rows.

Nothing here imports the server: the tests see it only through its REST interface.
Every 5xx answer is remembered in ``Api.server_errors`` (shared by the Api objects of a
test), since a 5xx is a failure wherever it happens, even where the caller expects
the request to fail.
"""

from __future__ import annotations

import io
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import requests

from ._servers import ServerProcess

ARROW_STREAM = "application/vnd.apache.arrow.stream"
TIMEOUT = 120.0
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("label", pa.string())])
WIDE_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("x", pa.float64())])


# ------------------------------------------------------------------------ bodies
def stream_bytes(table: pa.Table, batch_rows: int | None = None) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch_rows)
    return sink.getvalue()


def rows(ids: Iterable[int]) -> bytes:
    """An Arrow stream of rows ``(id, "r<id>")``."""
    id_list = list(ids)
    return stream_bytes(pa.table({"id": id_list, "label": [f"r{i}" for i in id_list]},
                                 schema=SCHEMA))


def bad_rows(ids: Iterable[int]) -> bytes:
    """Rows of the wrong schema (``label`` is an integer): every insert of them is a 400."""
    id_list = list(ids)
    return stream_bytes(pa.table({"id": pa.array(id_list, pa.int64()),
                                  "label": pa.array(id_list, pa.int64())}))


def wide_table(first: int, count: int, seed: int = 0) -> pa.Table:
    """``count`` rows of ``(id, x)``, ids from ``first``; x random, so nothing compresses."""
    ids = np.arange(first, first + count, dtype=np.int64)
    xs = np.random.default_rng(seed).random(count)
    return pa.table({"id": ids, "x": xs}, schema=WIDE_SCHEMA)


def wide_stream_chunks(table: pa.Table, chunk_bytes: int = 1 << 20) -> list[bytes]:
    """``table`` as an Arrow stream cut into pieces, for an upload that can be interrupted."""
    data = stream_bytes(table, batch_rows=65536)
    return [data[i:i + chunk_bytes] for i in range(0, len(data), chunk_bytes)]


def quoted(identifier: str) -> str:
    return urllib.parse.quote(identifier, safe="")


# ---------------------------------------------------------------------------- API
class Api:
    """One client of one server: its own ``requests`` session, so one per thread."""

    def __init__(self, server: ServerProcess, server_errors: list[str] | None = None) -> None:
        self.server = server
        self.session = requests.Session()
        self.server_errors: list[str] = [] if server_errors is None else server_errors
        self._errors_lock = threading.Lock()

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- raw calls
    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", TIMEOUT)
        resp = self.session.request(method, self.server.url + path, **kwargs)
        if resp.status_code >= 500:
            with self._errors_lock:
                self.server_errors.append(
                    f"{self.server.name} {method} {path} -> {resp.status_code}: {resp.text[:300]}")
        return resp

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def table(self, table: str, action: str, body: dict[str, Any] | None = None,
              **params: Any) -> requests.Response:
        return self.post(f"/v1/table/{quoted(table)}/{action}", json=body or {},
                         params=params or None)

    def namespace(self, ns: str, action: str, body: dict[str, Any] | None = None,
                  **params: Any) -> requests.Response:
        return self.post(f"/v1/namespace/{quoted(ns)}/{action}", json=body or {},
                         params=params or None)

    def upload(self, table: str, action: str, body: bytes | Iterator[bytes],
               **params: Any) -> requests.Response:
        return self.post(f"/v1/table/{quoted(table)}/{action}", data=body,
                         params=params or None, headers={"Content-Type": ARROW_STREAM})

    # ------------------------------------------------------------------ writes
    def create_namespace(self, ns: str, mode: str = "create") -> requests.Response:
        return self.namespace(ns, "create", {"mode": mode})

    def create(self, table: str, body: bytes | Iterator[bytes],
               mode: str | None = None) -> requests.Response:
        return self.upload(table, "create", body, **({"mode": mode} if mode else {}))

    def insert(self, table: str, body: bytes | Iterator[bytes]) -> requests.Response:
        return self.upload(table, "insert", body, mode="append")

    def delete(self, table: str, predicate: str) -> requests.Response:
        return self.table(table, "delete", {"predicate": predicate})

    # ------------------------------------------------------------------- reads
    def count(self, table: str, predicate: str | None = None,
              version: int | None = None) -> int:
        body: dict[str, Any] = {}
        if predicate is not None:
            body["predicate"] = predicate
        if version is not None:
            body["version"] = version
        resp = self.table(table, "count_rows", body)
        assert resp.status_code == 200, f"{self.server.name} count_rows {table}: {resp.text}"
        value = resp.json()
        assert isinstance(value, int), resp.text
        return value

    def ids(self, table: str, version: int | None = None,
            column: str = "id") -> list[int]:
        """Every id of the table (at ``version``), in no particular order, with repeats."""
        body: dict[str, Any] = {"filter": "true", "columns": {"column_names": [column]}}
        if version is not None:
            body["version"] = version
        resp = self.table(table, "query", body)
        assert resp.status_code == 200, f"{self.server.name} query {table}@{version}: {resp.text}"
        data = pa.ipc.open_file(pa.BufferReader(resp.content)).read_all()
        return [int(i) for i in data.column(column).to_pylist()]

    def status(self, table: str, action: str = "exists") -> int:
        return self.table(table, action).status_code

    def describe(self, table: str) -> dict[str, Any]:
        resp = self.table(table, "describe")
        assert resp.status_code == 200, f"{self.server.name} describe {table}: {resp.text}"
        out: dict[str, Any] = resp.json()
        return out

    def versions(self, table: str) -> list[int]:
        found = self._pages(f"/v1/table/{quoted(table)}/version/list", "versions")
        return sorted(int(entry["version"]) for entry in found)

    def tags(self, table: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, entry in self._pages(f"/v1/table/{quoted(table)}/tags/list", "tags").items():
            found[name] = int(entry["version"])
        return found

    def tables(self, ns: str) -> list[str]:
        return sorted(self._pages(f"/v1/namespace/{quoted(ns)}/table/list", "tables"))

    def all_tables(self) -> list[str]:
        return sorted(self._pages("/v1/table", "tables", method="GET"))

    def namespaces(self, ns: str = "$") -> list[str]:
        return sorted(self._pages(f"/v1/namespace/{quoted(ns)}/list", "namespaces"))

    def _pages(self, path: str, member: str, method: str = "POST") -> Any:
        """All items of a paginated listing, following page tokens."""
        items: Any = None
        token: str | None = None
        for _ in range(1000):
            params = {"page_token": token} if token else None
            resp = self.request(method, path, params=params,
                                **({"json": {}} if method == "POST" else {}))
            assert resp.status_code == 200, f"{self.server.name} {path}: {resp.text}"
            page = resp.json()[member]
            if items is None:
                items = page
            elif isinstance(items, dict):
                items.update(page)
            else:
                items.extend(page)
            token = resp.json().get("page_token")
            if not token:
                return items
        raise AssertionError(f"{path}: more than 1000 pages")


def alternate(servers: Sequence[ServerProcess], server_errors: list[str]) -> list[Api]:
    return [Api(server, server_errors) for server in servers]


def duplicates(values: Iterable[int]) -> dict[int, int]:
    return {value: n for value, n in Counter(values).items() if n > 1}


def run_threads(targets: Sequence[Callable[[], None]], timeout: float = 120.0) -> list[str]:
    """Run each target in a thread; the exceptions they raised, as text."""
    failures: list[str] = []
    lock = threading.Lock()

    def wrap(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=wrap, args=(t,), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        assert not thread.is_alive(), "a client thread is stuck"
    return failures
