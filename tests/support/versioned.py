"""A table of ``(id, label)`` rows over HTTP, written and read back exactly at any version.

Used by the version, branch, tag and concurrency tests: ``read`` finds every row twice (by
counting each known id, and with a filter-only query) and both must agree.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import requests

from tests.support import ipc_stream, read_ipc_file

SCHEMA = pa.schema([("id", pa.int64()), ("label", pa.string())])
UNIVERSE = [*range(1, 10), 100, 101]


def rows(ids: list[int]) -> bytes:
    return ipc_stream({"id": ids, "label": [f"r{i}" for i in ids]}, schema=SCHEMA)


def create(http: requests.Session, base_url: str, table: str, ids: list[int]) -> int:
    resp = http.post(f"{base_url}/v1/table/{table}/create", data=rows(ids),
                     headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    assert resp.status_code == 200, resp.text
    version: int = resp.json()["version"]
    return version


def insert(http: requests.Session, base_url: str, table: str, ids: list[int],
           branch: str | None = None) -> int:
    params = {"branch": branch} if branch else {}
    resp = http.post(f"{base_url}/v1/table/{table}/insert", data=rows(ids), params=params,
                     headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["num_inserted_rows"] == len(ids)
    version: int = resp.json()["version"]
    return version


def delete(http: requests.Session, base_url: str, table: str, predicate: str,
           branch: str | None = None) -> int:
    body: dict[str, Any] = {"predicate": predicate}
    if branch:
        body["branch"] = branch
    resp = http.post(f"{base_url}/v1/table/{table}/delete", json=body)
    assert resp.status_code == 200, resp.text
    version: int = resp.json()["version"]
    return version


def count(http: requests.Session, base_url: str, table: str, predicate: str | None = None,
          version: int | None = None, branch: str | None = None) -> int:
    body = {k: v for k, v in
            {"predicate": predicate, "version": version, "branch": branch}.items() if v is not None}
    resp = http.post(f"{base_url}/v1/table/{table}/count_rows", json=body)
    assert resp.status_code == 200, resp.text
    n: int = resp.json()
    return n


def read(http: requests.Session, base_url: str, table: str, *, version: int | None = None,
         branch: str | None = None) -> list[tuple[int, str]]:
    """Every row of the table at ``version`` of ``branch``, sorted.

    Rows are found twice: by counting each known id with count_rows (GET and POST), and
    with a filter-only query; both must agree.
    """
    found: list[tuple[int, str]] = []
    for i in UNIVERSE:
        n = count(http, base_url, table, f"id = {i} AND label = 'r{i}'", version, branch)
        found.extend([(i, f"r{i}")] * n)
    assert count(http, base_url, table, None, version, branch) == len(found)
    params = {k: v for k, v in {"version": version, "branch": branch}.items() if v is not None}
    got = http.get(f"{base_url}/v1/table/{table}/count_rows", params=params)
    assert got.status_code == 200 and got.json() == len(found), got.text
    queried = read_by_query(http, base_url, table, version=version, branch=branch)
    assert Counter(queried) == Counter(found)
    return sorted(found)


def read_by_query(http: requests.Session, base_url: str, table: str, *,
                  version: int | None = None,
                  branch: str | None = None) -> list[tuple[int, str]]:
    """All rows through a filter-only query (an Arrow IPC file)."""
    params = {k: v for k, v in {"version": version, "branch": branch}.items() if v is not None}
    resp = http.post(f"{base_url}/v1/table/{table}/query", json={"filter": "true", **params})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/vnd.apache.arrow.file")
    data = read_ipc_file(resp.content)
    return list(zip(data.column("id").to_pylist(), data.column("label").to_pylist(), strict=True))


def read_ids_by_query(http: requests.Session, base_url: str, table: str, *,
                      branch: str | None = None) -> list[int]:
    return [i for i, _ in read_by_query(http, base_url, table, branch=branch)]


def expect(ids: list[int]) -> list[tuple[int, str]]:
    return sorted((i, f"r{i}") for i in ids)


def post(http: requests.Session, base_url: str, table: str, action: str,
         body: dict[str, Any] | None = None) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{table}/{action}", json=body or {})


def ok(resp: requests.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body
