"""Tables over HTTP: create, declare, list, describe, exists, drop, count_rows."""

from __future__ import annotations

import base64
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, table_location
from tests.support.stores import StoreView

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("vec", pa.list_(pa.float32(), 3)),
])


def _rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" for i in ids]),
        "vec": pa.array([[float(i), 0.0, 1.0] for i in ids], pa.list_(pa.float32(), 3)),
    }, schema=SCHEMA)


def _create(http: requests.Session, base_url: str, ident: str, data: pa.Table,
            **params: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{ident}/create", data=ipc_stream(data),
                     params=params, headers={"Content-Type": "application/vnd.apache.arrow.stream"})


def _describe(http: requests.Session, base_url: str, ident: str, **body: Any) -> dict[str, Any]:
    resp = http.post(f"{base_url}/v1/table/{ident}/describe", json=body)
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def _count(http: requests.Session, base_url: str, ident: str, **body: Any) -> int:
    resp = http.post(f"{base_url}/v1/table/{ident}/count_rows", json=body)
    assert resp.status_code == 200, resp.text
    n: int = resp.json()
    return n


def _exists(http: requests.Session, base_url: str, ident: str) -> bool:
    resp = http.post(f"{base_url}/v1/table/{ident}/exists", json={})
    if resp.status_code == 404:
        assert_error(resp, 404)
        return False
    assert resp.status_code == 200, resp.text
    return True


def _tables(http: requests.Session, base_url: str, ns: str, **params: Any) -> list[str]:
    resp = http.get(f"{base_url}/v1/namespace/{ns}/table/list", params=params)
    assert resp.status_code == 200, resp.text
    names: list[str] = resp.json()["tables"]
    return names


def _decoded_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


# ------------------------------------------------------------------------- create
def test_create_from_stream(http: requests.Session, base_url: str, ns: str) -> None:
    resp = _create(http, base_url, f"{ns}$t", _rows(10))
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == 1
    assert _count(http, base_url, f"{ns}$t") == 10
    info = _describe(http, base_url, f"{ns}$t")
    assert info["version"] == 1
    assert info["stats"]["num_rows"] == 10
    assert info["is_only_declared"] is False
    assert [f["name"] for f in info["schema"]["fields"]] == ["id", "name", "vec"]
    assert info["schema"]["fields"][0] == {"name": "id", "nullable": False,
                                           "type": {"type": "int64"}}
    assert info["schema"]["fields"][2]["type"]["length"] == 3
    assert _decoded_schema(info["arrow_schema"]) == SCHEMA


def test_create_from_multi_batch_stream(http: requests.Session, base_url: str, ns: str) -> None:
    table = pa.concat_tables([_rows(100, start) for start in range(0, 1000, 100)])
    assert len(table.to_batches()) == 10
    resp = _create(http, base_url, f"{ns}$t", table)
    assert resp.status_code == 200, resp.text
    assert _count(http, base_url, f"{ns}$t") == 1000
    assert _count(http, base_url, f"{ns}$t", predicate="id >= 990") == 10


def test_create_from_empty_stream(http: requests.Session, base_url: str, ns: str) -> None:
    schema = pa.schema([
        pa.field("k", pa.int32(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("emb", pa.list_(pa.float16(), 8)),
    ], metadata={b"origin": b"test"})
    resp = _create(http, base_url, f"{ns}$empty", schema.empty_table())
    assert resp.status_code == 200, resp.text
    assert _count(http, base_url, f"{ns}$empty") == 0
    info = _describe(http, base_url, f"{ns}$empty")
    assert info["stats"]["num_rows"] == 0
    assert [f["name"] for f in info["schema"]["fields"]] == ["k", "ts", "tags", "emb"]
    assert _decoded_schema(info["arrow_schema"]) == schema
    assert _decoded_schema(info["arrow_schema"]).metadata == {b"origin": b"test"}
    # An empty table takes appends of that schema.
    data = pa.table({"k": pa.array([1], pa.int32()),
                     "ts": pa.array([0], pa.timestamp("us", tz="UTC")),
                     "tags": pa.array([["a"]]),
                     "emb": pa.array([[0.5] * 8], pa.list_(pa.float16(), 8))}, schema=schema)
    resp = http.post(f"{base_url}/v1/table/{ns}$empty/insert", data=ipc_stream(data),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert _count(http, base_url, f"{ns}$empty") == 1


def test_create_existing_is_409_and_keeps_data(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(5)).status_code == 200
    err = assert_error(_create(http, base_url, f"{ns}$t", _rows(2)), 409, 5)
    assert "exist" in err["detail"]
    assert_error(_create(http, base_url, f"{ns}$t", _rows(2), mode="CREATE"), 409, 5)
    assert _count(http, base_url, f"{ns}$t") == 5
    assert _describe(http, base_url, f"{ns}$t")["version"] == 1


@pytest.mark.parametrize("mode", ["exist_ok", "ExistOk", "EXISTOK"])
def test_create_exist_ok_keeps_data(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(5)).status_code == 200
    resp = _create(http, base_url, f"{ns}$t", _rows(2), mode=mode)
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == 1
    assert _count(http, base_url, f"{ns}$t") == 5


@pytest.mark.parametrize("mode", ["overwrite", "Overwrite"])
def test_create_overwrite_replaces_data(
    http: requests.Session, base_url: str, ns: str, mode: str
) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(5)).status_code == 200
    other = pa.table({"z": ["only"]})
    resp = _create(http, base_url, f"{ns}$t", other, mode=mode)
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == 2
    assert _count(http, base_url, f"{ns}$t") == 1
    info = _describe(http, base_url, f"{ns}$t")
    assert _decoded_schema(info["arrow_schema"]) == other.schema


def test_create_bad_mode_or_body_is_400(
    http: requests.Session, base_url: str, ns: str, store: StoreView
) -> None:
    err = assert_error(_create(http, base_url, f"{ns}$t", _rows(1), mode="upsert"), 400, 13)
    assert "mode" in err["detail"]
    before = store.data_folders()
    resp = http.post(f"{base_url}/v1/table/{ns}$t/create", data=b"not arrow at all",
                     headers=ARROW_HEADERS)
    assert_error(resp, 400, 13)
    resp = http.post(f"{base_url}/v1/table/{ns}$t/create", data=ipc_stream(_rows(100))[:-200],
                     headers=ARROW_HEADERS)
    assert_error(resp, 400, 13)
    assert not _exists(http, base_url, f"{ns}$t")
    assert store.data_folders() == before
    assert _tables(http, base_url, ns) == []
    # The name is still free.
    assert _create(http, base_url, f"{ns}$t", _rows(1)).status_code == 200


def test_create_in_missing_namespace_is_404(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert_error(_create(http, base_url, f"{ns}$nope$t", _rows(1)), 404, 1)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$nope$t/declare", json={}), 404, 1)


def test_table_at_root_namespace(http: requests.Session, base_url: str, ns: str) -> None:
    """A one-part id is a table in the root namespace."""
    name = f"root_{ns}"
    assert _create(http, base_url, name, _rows(3)).status_code == 200
    try:
        assert name in _tables(http, base_url, "$")
        assert _count(http, base_url, name) == 3
    finally:
        assert http.post(f"{base_url}/v1/table/{name}/drop", json={}).status_code == 200
    assert name not in _tables(http, base_url, "$")


# ------------------------------------------------------------------------ declare
def test_declare(http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    before = store.data_folders()
    resp = http.post(f"{base_url}/v1/table/{ns}$d/declare", json={"properties": {"a": "b"}})
    assert resp.status_code == 200, resp.text
    assert store.data_folders() == before
    assert _exists(http, base_url, f"{ns}$d")
    info = _describe(http, base_url, f"{ns}$d")
    assert info["is_only_declared"] is True
    assert info["properties"] == {"a": "b"}
    assert info["schema"] is None
    # Nothing to count or delete yet.
    assert_error(http.post(f"{base_url}/v1/table/{ns}$d/count_rows", json={}), 404, 4)
    # Declaring twice, or declaring a created table, is a conflict.
    assert_error(http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}), 409, 5)
    assert _create(http, base_url, f"{ns}$t", _rows(1)).status_code == 200
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/declare", json={}), 409, 5)
    assert _count(http, base_url, f"{ns}$t") == 1


def test_insert_into_declared_creates(
    http: requests.Session, base_url: str, ns: str, store: StoreView
) -> None:
    assert http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}).status_code == 200
    resp = http.post(f"{base_url}/v1/table/{ns}$d/insert", data=ipc_stream(_rows(4)),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json()["num_inserted_rows"] == 4
    assert store.exists(table_location(http, base_url, f"{ns}$d"))
    info = _describe(http, base_url, f"{ns}$d")
    assert info["is_only_declared"] is False
    assert info["stats"]["num_rows"] == 4
    assert _decoded_schema(info["arrow_schema"]) == SCHEMA
    assert _tables(http, base_url, ns, include_declared="false") == ["d"]
    resp = http.post(f"{base_url}/v1/table/{ns}$d/insert", data=ipc_stream(_rows(2, 10)),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert _count(http, base_url, f"{ns}$d") == 6


def test_create_over_declared(http: requests.Session, base_url: str, ns: str) -> None:
    assert http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}).status_code == 200
    assert _create(http, base_url, f"{ns}$d", _rows(3)).status_code == 200
    assert _describe(http, base_url, f"{ns}$d")["is_only_declared"] is False
    assert _count(http, base_url, f"{ns}$d") == 3


def test_failed_insert_into_declared_keeps_it_declared(
    http: requests.Session, base_url: str, ns: str, store: StoreView
) -> None:
    assert http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}).status_code == 200
    before = store.data_folders()
    resp = http.post(f"{base_url}/v1/table/{ns}$d/insert", data=ipc_stream(_rows(100))[:-100],
                     headers=ARROW_HEADERS)
    assert_error(resp, 400, 13)
    assert _describe(http, base_url, f"{ns}$d")["is_only_declared"] is True
    assert store.data_folders() == before


# -------------------------------------------------------------------------- lists
def test_list_tables(http: requests.Session, base_url: str, ns: str) -> None:
    for name in ["c", "a", "b"]:
        assert _create(http, base_url, f"{ns}${name}", _rows(1)).status_code == 200
    assert http.post(f"{base_url}/v1/table/{ns}$decl/declare", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{ns}$child/create", json={}).status_code == 200
    assert _create(http, base_url, f"{ns}$child$inner", _rows(1)).status_code == 200
    assert _tables(http, base_url, ns) == ["a", "b", "c", "decl"]
    assert _tables(http, base_url, ns, include_declared="true") == ["a", "b", "c", "decl"]
    assert _tables(http, base_url, ns, include_declared="false") == ["a", "b", "c"]
    assert _tables(http, base_url, f"{ns}$child") == ["inner"]
    resp = http.post(f"{base_url}/v1/namespace/{ns}/table/list")
    assert resp.status_code == 200 and resp.json()["tables"] == ["a", "b", "c", "decl"]
    assert_error(http.get(f"{base_url}/v1/namespace/{ns}$nope/table/list"), 404, 1)
    assert_error(http.get(f"{base_url}/v1/namespace/{ns}/table/list",
                          params={"include_declared": "maybe"}), 400, 13)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 10])
def test_list_tables_pages(http: requests.Session, base_url: str, ns: str, limit: int) -> None:
    names = ["t0", "t1", "t2", "t3"]
    for name in names:
        assert http.post(f"{base_url}/v1/table/{ns}${name}/declare", json={}).status_code == 200
    seen: list[str] = []
    token: str | None = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": limit}
        if token:
            params["page_token"] = token
        body = http.get(f"{base_url}/v1/namespace/{ns}/table/list", params=params).json()
        assert len(body["tables"]) <= limit
        seen.extend(body["tables"])
        token = body.get("page_token")
        if not token:
            break
    assert seen == names
    assert_error(http.get(f"{base_url}/v1/namespace/{ns}/table/list",
                          params={"page_token": "x/y"}), 400, 13)
    assert_error(http.get(f"{base_url}/v1/namespace/{ns}/table/list",
                          params={"limit": "-3"}), 400, 13)


def test_list_all_tables(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$a", _rows(1)).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{ns}$x/create", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{ns}$x$y/create", json={}).status_code == 200
    assert _create(http, base_url, f"{ns}$x$y$deep", _rows(1)).status_code == 200
    assert http.post(f"{base_url}/v1/table/{ns}$x$d/declare", json={}).status_code == 200
    everything: list[str] = []
    token: str | None = None
    for _ in range(1000):
        params: dict[str, Any] = {"limit": 50}
        if token:
            params["page_token"] = token
        resp = http.get(f"{base_url}/v1/table", params=params)
        assert resp.status_code == 200, resp.text
        everything.extend(resp.json()["tables"])
        token = resp.json().get("page_token")
        if not token:
            break
    mine = sorted(t for t in everything if t.startswith(f"{ns}$"))
    assert mine == [f"{ns}$a", f"{ns}$x$d", f"{ns}$x$y$deep"]
    assert len(everything) == len(set(everything))
    resp = http.get(f"{base_url}/v1/table", params={"delimiter": ".", "limit": "1000"})
    assert resp.status_code == 200, resp.text
    assert f"{ns}.x.y.deep" in resp.json()["tables"]


# ----------------------------------------------------------- describe and exists
def test_describe_tracks_versions(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(3)).status_code == 200
    resp = http.post(f"{base_url}/v1/table/{ns}$t/insert", data=ipc_stream(_rows(2, 3)),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    info = _describe(http, base_url, f"{ns}$t")
    assert info["version"] == 2
    assert info["stats"]["num_rows"] == 5
    assert info["table"] == "t" and info["namespace"] == [ns]
    old = _describe(http, base_url, f"{ns}$t", version=1)
    assert old["version"] == 1 and old["stats"]["num_rows"] == 3
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/describe", json={"version": 99}),
                 404, 11)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/describe", json={"version": -1}),
                 400, 13)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/describe", json={"version": "1"}),
                 400, 13)


def test_row_counts_come_from_the_manifest(
        http: requests.Session, base_url: str, ns: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from lance.dataset import LanceDataset

    assert _create(http, base_url, f"{ns}$t", _rows(4)).status_code == 200
    counted: list[int] = []
    count_rows = LanceDataset.count_rows

    def counting(self: LanceDataset, *args: Any, **kwargs: Any) -> int:
        counted.append(1)
        return count_rows(self, *args, **kwargs)

    monkeypatch.setattr(LanceDataset, "count_rows", counting)
    stats_url = f"{base_url}/v1/table/{ns}$t/stats"
    # The summary has total_rows: describe and stats read it and count nothing.
    assert _describe(http, base_url, f"{ns}$t")["stats"]["num_rows"] == 4
    assert http.post(stats_url, json={}).json()["num_rows"] == 4
    assert counted == []
    # A summary without it (an older manifest): the rows are counted, once per answer.
    get_version = LanceDataset.get_version

    def without_total(self: LanceDataset) -> dict[str, Any]:
        version: dict[str, Any] = get_version(self)
        metadata = {k: v for k, v in (version.get("metadata") or {}).items()
                    if k != "total_rows"}
        return {**version, "metadata": metadata}

    monkeypatch.setattr(LanceDataset, "get_version", without_total)
    assert _describe(http, base_url, f"{ns}$t")["stats"]["num_rows"] == 4
    assert http.post(stats_url, json={}).json()["num_rows"] == 4
    assert counted == [1, 1]


def test_exists_and_missing(http: requests.Session, base_url: str, ns: str) -> None:
    assert not _exists(http, base_url, f"{ns}$t")
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/exists", json={}), 404, 4)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/describe", json={}), 404, 4)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$nope$t/exists", json={}), 404, 1)
    assert _create(http, base_url, f"{ns}$t", _rows(1)).status_code == 200
    assert _exists(http, base_url, f"{ns}$t")
    # A namespace is not a table.
    assert http.post(f"{base_url}/v1/namespace/{ns}$n/create", json={}).status_code == 200
    assert not _exists(http, base_url, f"{ns}$n")


# --------------------------------------------------------------------------- drop
def test_drop(http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(3)).status_code == 200
    assert _create(http, base_url, f"{ns}$keep", _rows(2)).status_code == 200
    location = table_location(http, base_url, f"{ns}$t")
    assert store.exists(location)
    resp = http.post(f"{base_url}/v1/table/{ns}$t/drop", json={})
    assert resp.status_code == 200, resp.text
    assert not _exists(http, base_url, f"{ns}$t")
    assert not store.exists(location)
    assert _tables(http, base_url, ns) == ["keep"]
    assert_error(http.post(f"{base_url}/v1/table/{ns}$t/drop", json={}), 404, 4)
    assert _count(http, base_url, f"{ns}$keep") == 2
    # The name can be used again, with a new schema, from version 1.
    resp = _create(http, base_url, f"{ns}$t", pa.table({"other": [1.5]}))
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == 1
    assert _count(http, base_url, f"{ns}$t") == 1


def test_drop_declared(http: requests.Session, base_url: str, ns: str) -> None:
    assert http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/table/{ns}$d/drop", json={}).status_code == 200
    assert not _exists(http, base_url, f"{ns}$d")
    assert _tables(http, base_url, ns) == []


# --------------------------------------------------------------------- count_rows
def test_count_rows_get_and_post(http: requests.Session, base_url: str, ns: str) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(20)).status_code == 200
    url = f"{base_url}/v1/table/{ns}$t/count_rows"
    assert http.get(url).json() == 20
    assert http.post(url).json() == 20
    assert http.post(url, json={}).json() == 20
    assert http.get(url, params={"predicate": "id < 5"}).json() == 5
    assert http.get(url, params={"filter": "name = 'n7'"}).json() == 1
    assert http.post(url, json={"predicate": "id >= 15"}).json() == 5
    assert http.post(url, json={"filter": "id >= 15 AND id < 17"}).json() == 2
    assert http.post(url, json={"predicate": "id > 100"}).json() == 0
    resp = http.post(f"{base_url}/v1/table/{ns}$t/insert", data=ipc_stream(_rows(5, 20)),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert http.get(url).json() == 25
    assert http.get(url, params={"version": 1}).json() == 20
    assert http.post(url, json={"version": 1, "predicate": "id < 3"}).json() == 3


@pytest.mark.parametrize("predicate", [
    pytest.param("id <", id="incomplete"),
    pytest.param("no_such_column = 1", id="unknown-column"),
    pytest.param("id = = 2", id="syntax"),
    pytest.param("name + ", id="dangling-op"),
])
def test_count_rows_invalid_filter_is_400(
    http: requests.Session, base_url: str, ns: str, predicate: str
) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(3)).status_code == 200
    url = f"{base_url}/v1/table/{ns}$t/count_rows"
    err = assert_error(http.post(url, json={"predicate": predicate}), 400)
    assert err["code"] in (12, 13)
    assert_error(http.get(url, params={"predicate": predicate}), 400)


def test_count_rows_bad_members_are_400(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert _create(http, base_url, f"{ns}$t", _rows(3)).status_code == 200
    url = f"{base_url}/v1/table/{ns}$t/count_rows"
    assert_error(http.post(url, json={"predicate": 5}), 400, 13)
    assert_error(http.post(url, json={"version": "one"}), 400, 13)
    assert_error(http.post(url, json={"version": -1}), 400, 13)
    assert_error(http.get(url, params={"version": "x"}), 400, 13)
    assert_error(http.post(url, json={"version": 42}), 404, 11)
    assert_error(http.post(f"{base_url}/v1/table/{ns}$missing/count_rows", json={}), 404, 4)


# -------------------------------------------------------------------- races, rollback
def test_concurrent_creates_one_wins(http: requests.Session, base_url: str, ns: str) -> None:
    def create(i: int) -> requests.Response:
        with requests.Session() as session:
            return _create(session, base_url, f"{ns}$race", _rows(i + 1))

    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(create, range(6)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 5, [r.text for r in responses]
    for resp in responses:
        if resp.status_code == 409:
            assert_error(resp, 409, 5)
    winner = next(r for r in responses if r.status_code == 200)
    assert _count(http, base_url, f"{ns}$race") == winner.json()["num_inserted_rows"]


def test_failed_create_with_properties_leaves_nothing(
    http: requests.Session, base_url: str, ns: str
) -> None:
    resp = http.post(f"{base_url}/v1/table/{ns}$t/create", data=b"not arrow", headers=ARROW_HEADERS,
                     params={"properties": '{"owner": "ann"}'})
    assert_error(resp, 400, 13)
    assert not _exists(http, base_url, f"{ns}$t")
    assert _tables(http, base_url, ns) == []
    resp = _create(http, base_url, f"{ns}$t", _rows(1), properties='{"owner": "ann"}')
    assert resp.status_code == 200, resp.text
    assert _describe(http, base_url, f"{ns}$t")["properties"] == {"owner": "ann"}
    assert_error(_create(http, base_url, f"{ns}$u", _rows(1), properties="[1]"), 400, 13)
    assert_error(_create(http, base_url, f"{ns}$u", _rows(1), properties="{"), 400, 13)
    assert not _exists(http, base_url, f"{ns}$u")


def test_concurrent_first_inserts_into_declared_keep_all_rows(
    http: requests.Session, base_url: str, ns: str
) -> None:
    assert http.post(f"{base_url}/v1/table/{ns}$d/declare", json={}).status_code == 200

    def insert(i: int) -> requests.Response:
        with requests.Session() as session:
            return session.post(f"{base_url}/v1/table/{ns}$d/insert",
                                data=ipc_stream(_rows(10, i * 10)), headers=ARROW_HEADERS)

    with ThreadPoolExecutor(max_workers=5) as pool:
        responses = list(pool.map(insert, range(5)))
    assert [r.status_code for r in responses] == [200] * 5, [r.text for r in responses]
    assert _count(http, base_url, f"{ns}$d") == 50
    assert sorted(r.json()["version"] for r in responses) == [1, 2, 3, 4, 5]


def test_properties_survive_creation(http: requests.Session, base_url: str, ns: str) -> None:
    resp = http.post(f"{base_url}/v1/table/{ns}$d/declare", json={"properties": {"k": "v"}})
    assert resp.status_code == 200, resp.text
    assert http.post(f"{base_url}/v1/table/{ns}$d/insert",
                     data=ipc_stream(_rows(1)), headers=ARROW_HEADERS).status_code == 200
    info = _describe(http, base_url, f"{ns}$d")
    assert info["is_only_declared"] is False
    assert info["properties"] == {"k": "v"}
    assert _tables(http, base_url, ns, include_declared="false") == ["d"]
    assert http.post(f"{base_url}/v1/table/{ns}$d/drop", json={}).status_code == 200
    assert _tables(http, base_url, ns) == []


def test_listing_never_shows_a_table_being_dropped(
    http: requests.Session, base_url: str, ns: str
) -> None:
    """A dropped table leaves the listing at once, never under another name."""
    many_files = pa.concat_tables([_rows(10, i * 10) for i in range(40)])
    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:
        with requests.Session() as session:
            while not stop.is_set():
                url = f"{base_url}/v1/namespace/{ns}/table/list"
                seen.update(session.get(url).json()["tables"])

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for round_ in range(2):
            name = f"big{round_}"
            assert _create(http, base_url, f"{ns}${name}", many_files).status_code == 200
            for start in range(0, 200, 10):  # many small fragments: a slow rmtree
                resp = http.post(f"{base_url}/v1/table/{ns}${name}/insert",
                                 data=ipc_stream(_rows(1, start)), headers=ARROW_HEADERS)
                assert resp.status_code == 200, resp.text
            assert http.post(f"{base_url}/v1/table/{ns}${name}/drop",
                             json={}).status_code == 200
    finally:
        stop.set()
        watcher.join()
    assert seen <= {"big0", "big1", "big2", "big3"}, seen
    assert _tables(http, base_url, ns) == []
