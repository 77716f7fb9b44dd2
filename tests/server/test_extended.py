"""The extended deployment's endpoints, and context headers."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from tests.support import assert_error, ipc_stream, read_ipc_file

KEY = "ext-" + secrets.token_hex(16)
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


@pytest.fixture(scope="module")
def ext(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("ext"), api_keys=[KEY]) as running:
        yield running


def post(server: RunningServer, path: str, **kwargs: Any) -> requests.Response:
    headers = {"x-api-key": KEY, **kwargs.pop("headers", {})}
    return requests.post(f"{server.url}{path}", headers=headers, **kwargs)


def get(server: RunningServer, path: str, **kwargs: Any) -> requests.Response:
    return requests.get(f"{server.url}{path}", headers={"x-api-key": KEY}, **kwargs)


def name() -> str:
    return f"t{secrets.token_hex(5)}"


# -------------------------------------------------------- POST /v1/tables/<name>
def test_create_table_with_data(ext: RunningServer) -> None:
    table = name()
    data = {"id": [1, 2, 3], "label": ["a", "b", "c"]}
    resp = post(ext, f"/v1/tables/{table}", data=ipc_stream(data), headers=ARROW)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"table": table, "version": 1, "num_inserted_rows": 3,
                           "is_only_declared": False}
    described = post(ext, f"/v1/table/{table}/describe", json={}).json()
    assert [f["name"] for f in described["schema"]["fields"]] == ["id", "label"]
    result = post(ext, f"/v1/table/{table}/query", json={"k": 10})
    assert result.status_code == 200, result.text
    assert read_ipc_file(result.content).sort_by("id").to_pydict() == data
    assert post(ext, f"/v1/table/{table}/count_rows", json={}).json() == 3


def test_create_existing_table_is_409_and_keeps_the_data(ext: RunningServer) -> None:
    table = name()
    assert post(ext, f"/v1/tables/{table}", data=ipc_stream({"x": [1]}),
                headers=ARROW).status_code == 200
    resp = post(ext, f"/v1/tables/{table}", data=ipc_stream({"x": [7, 8]}), headers=ARROW)
    assert_error(resp, 409, 5)
    assert_error(post(ext, f"/v1/tables/{table}"), 409, 5)
    assert post(ext, f"/v1/table/{table}/count_rows", json={}).json() == 1


def test_create_without_body_declares_the_table(ext: RunningServer) -> None:
    table = name()
    resp = post(ext, f"/v1/tables/{table}", headers=ARROW)
    assert resp.status_code == 200, resp.text
    assert resp.json()["is_only_declared"] is True and resp.json()["version"] is None
    described = post(ext, f"/v1/table/{table}/describe", json={}).json()
    assert described["is_only_declared"] is True
    resp = post(ext, f"/v1/table/{table}/insert", data=ipc_stream({"x": [1, 2]}), headers=ARROW)
    assert resp.status_code == 200, resp.text
    assert post(ext, f"/v1/table/{table}/count_rows", json={}).json() == 2


def test_create_with_a_schema_and_no_rows_creates_an_empty_table(ext: RunningServer) -> None:
    table = name()
    schema = pa.schema([("id", pa.int64()), ("v", pa.list_(pa.float32(), 4))])
    resp = post(ext, f"/v1/tables/{table}", data=ipc_stream(schema.empty_table()),
                headers=ARROW)
    assert resp.status_code == 200, resp.text
    assert resp.json()["num_inserted_rows"] == 0 and resp.json()["version"] == 1
    described = post(ext, f"/v1/table/{table}/describe", json={}).json()
    assert described["is_only_declared"] is False
    assert described["schema"]["fields"][1]["type"]["length"] == 4
    assert post(ext, f"/v1/table/{table}/count_rows", json={}).json() == 0


def test_create_in_a_namespace(ext: RunningServer) -> None:
    ns, table = name(), name()
    assert post(ext, f"/v1/namespace/{ns}/create", json={}).status_code == 200
    resp = post(ext, f"/v1/tables/{ns}${table}", data=ipc_stream({"x": [1]}), headers=ARROW)
    assert resp.status_code == 200, resp.text
    listed = get(ext, f"/v1/namespace/{ns}/table/list").json()
    assert listed["tables"] == [table]
    resp = post(ext, f"/v1/tables/missing${table}", data=ipc_stream({"x": [1]}), headers=ARROW)
    assert_error(resp, 404, 1)


@pytest.mark.parametrize(
    ("body", "headers", "detail", "status"),
    [
        # JSON is refused for its media type (415), before any byte of it is read.
        (b'{"data": [1]}', {"Content-Type": "application/json"}, "Arrow IPC stream", 415),
        (b"definitely not arrow", ARROW, "not an Arrow IPC stream", 400),
    ],
)
def test_bad_bodies_are_refused_and_create_nothing(ext: RunningServer, body: bytes,
                                                   headers: dict[str, str], detail: str,
                                                   status: int) -> None:
    table = name()
    resp = post(ext, f"/v1/tables/{table}", data=body, headers=headers)
    assert detail in assert_error(resp, status, 13)["detail"]
    assert_error(post(ext, f"/v1/table/{table}/exists", json={}), 404)


def test_bad_table_name_is_400(ext: RunningServer) -> None:
    resp = post(ext, "/v1/tables/bad%01name", data=ipc_stream({"x": [1]}), headers=ARROW)
    assert "control character" in assert_error(resp, 400, 13)["detail"]


def test_create_needs_credentials(ext: RunningServer) -> None:
    table = name()
    resp = requests.post(f"{ext.url}/v1/tables/{table}", data=ipc_stream({"x": [1]}),
                         headers=ARROW)
    assert_error(resp, 401, 16)
    assert_error(post(ext, f"/v1/table/{table}/exists", json={}), 404)


# ------------------------------------------------------------------ GET /v1/tables
def test_list_tables_paginates_the_whole_database(tmp_path_factory: pytest.TempPathFactory
                                                   ) -> None:
    with serve_in_thread(tmp_path_factory.mktemp("ext-list"), api_keys=[KEY]) as server:
        assert post(server, "/v1/namespace/ns/create", json={}).status_code == 200
        expected = ["a1", "a2", "b1", "ns$inner", "z_declared"]
        for table in expected[:-1]:
            resp = post(server, f"/v1/tables/{table}", data=ipc_stream({"x": [1]}),
                        headers=ARROW)
            assert resp.status_code == 200, resp.text
        assert post(server, "/v1/tables/z_declared").status_code == 200
        seen: list[str] = []
        token: str | None = None
        pages = 0
        while True:
            params: dict[str, Any] = {"limit": 2, **({"page_token": token} if token else {})}
            page = get(server, "/v1/tables/", params=params).json()  # LanceDB adds a '/'
            assert len(page["tables"]) <= 2
            seen += page["tables"]
            pages += 1
            token = page.get("page_token")
            if not token:
                break
        assert sorted(seen) == sorted(expected) and len(seen) == len(expected)
        assert pages == 3
        assert get(server, "/v1/tables").json() == {"tables": sorted(expected),
                                                    "page_token": None}
        assert_error(get(server, "/v1/tables", params={"limit": "many"}), 400, 13)
        assert_error(get(server, "/v1/tables", params={"page_token": "x/y"}), 400, 13)


# --------------------------------------------------------------- context headers
def test_context_headers_win_over_body_and_are_logged(
    ext: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    ns = name()
    assert post(ext, f"/v1/namespace/{ns}/create", json={}).status_code == 200
    caplog.set_level(logging.INFO, logger="nsframe.server.access")
    resp = post(
        ext, f"/v1/namespace/{ns}/describe",
        json={"context": {"trace": "from-body", "tenant": "acme"}},
        headers={"x-service-ctx-trace": "from-header", "x-lance-ctx-legacy": "old",
                 "x-lance-ctx-both": "lance", "x-service-ctx-both": "service"},
    )
    assert resp.status_code == 200, resp.text
    records = [r for r in caplog.records
               if r.name == "nsframe.server.access" and ns in r.getMessage()]
    fields = records[-1].nsframe  # type: ignore[attr-defined]
    assert fields["method"] == "POST" and fields["status"] == 200
    assert fields["path"] == f"/v1/namespace/{ns}/describe"
    assert fields["database"] == "-" and fields["duration_ms"] >= 0
    assert fields["context"] == {"trace": "from-header", "tenant": "acme", "legacy": "old",
                                 "both": "service"}


def test_context_is_logged_for_refused_requests(ext: RunningServer,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nsframe.server.access")
    resp = requests.post(f"{ext.url}/v1/namespace/refused/create", json={},
                         headers={"x-service-ctx-trace": "abc"})
    assert resp.status_code == 401
    record = [r for r in caplog.records if "/refused/" in r.getMessage()][-1]
    assert record.nsframe["status"] == 401  # type: ignore[attr-defined]
    assert record.nsframe["context"] == {"trace": "abc"}  # type: ignore[attr-defined]


def test_malformed_body_context_is_400(ext: RunningServer) -> None:
    ns = name()
    assert post(ext, f"/v1/namespace/{ns}/create", json={}).status_code == 200
    resp = post(ext, f"/v1/namespace/{ns}/describe", json={"context": ["not", "a", "map"]})
    assert "context" in assert_error(resp, 400, 13)["detail"]
