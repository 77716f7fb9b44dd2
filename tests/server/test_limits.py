"""Request body limits: 413 with the error body, for JSON and Arrow, declared and chunked."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nsframe.server import RunningServer, ServerConfig, serve_in_thread
from tests.support import assert_error, ipc_stream

JSON_LIMIT = 4096
ARROW_LIMIT = 64 * 1024
KEY = "limits-" + secrets.token_hex(16)
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("limits"), max_json_bytes=JSON_LIMIT,
                         max_arrow_bytes="64KiB") as running:
        yield running


@pytest.fixture(scope="module")
def small_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("limits-auth"), max_json_bytes=JSON_LIMIT,
                         api_keys=[KEY]) as running:
        yield running


def chunked(data: bytes, size: int = 1000) -> Iterator[bytes]:
    """A body without Content-Length: requests sends it with Transfer-Encoding: chunked."""
    for start in range(0, len(data), size):
        yield data[start:start + size]


def big_json(size: int) -> bytes:
    return json.dumps({"properties": {"blob": "x" * size}}).encode()


def assert_too_large(resp: requests.Response, limit: int) -> dict[str, Any]:
    body = assert_error(resp, 413)
    assert body["type"] == "/errors/payload-too-large"
    assert str(limit) in body["detail"]
    return body


def exists(server: RunningServer, path: str) -> bool:
    return requests.post(f"{server.url}{path}/exists", json={}).status_code == 200


def rows(server: RunningServer, table: str) -> int:
    resp = requests.post(f"{server.url}/v1/table/{table}/count_rows", json={})
    assert resp.status_code == 200, resp.text
    count: int = resp.json()
    return count


def test_json_body_within_the_limit_passes(small: RunningServer) -> None:
    resp = requests.post(f"{small.url}/v1/namespace/fits/create", data=big_json(3000),
                         headers=JSON)
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["properties"]["blob"]) == 3000


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_json_body_over_the_limit_is_413(small: RunningServer, declared: bool) -> None:
    name = f"big{int(declared)}"
    payload = big_json(3 * JSON_LIMIT)
    resp = requests.post(f"{small.url}/v1/namespace/{name}/create",
                         data=payload if declared else chunked(payload), headers=JSON)
    assert_too_large(resp, JSON_LIMIT)
    assert not exists(small, f"/v1/namespace/{name}")


def test_arrow_body_within_the_limit_passes(small: RunningServer) -> None:
    data = ipc_stream({"id": list(range(1000))})
    assert len(data) < ARROW_LIMIT
    resp = requests.post(f"{small.url}/v1/table/fits_t/create", data=chunked(data),
                         headers=ARROW)
    assert resp.status_code == 200, resp.text
    assert rows(small, "fits_t") == 1000


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_arrow_insert_over_the_limit_is_413_and_writes_nothing(small: RunningServer,
                                                                declared: bool) -> None:
    table = f"arrow{int(declared)}"
    resp = requests.post(f"{small.url}/v1/table/{table}/create",
                         data=ipc_stream({"id": [1, 2]}), headers=ARROW)
    assert resp.status_code == 200, resp.text
    data = ipc_stream({"id": list(range(40_000))})  # ~320 KB, five times the limit
    resp = requests.post(f"{small.url}/v1/table/{table}/insert",
                         data=data if declared else chunked(data, 8192), headers=ARROW)
    assert_too_large(resp, ARROW_LIMIT)
    assert rows(small, table) == 2


def test_extended_create_over_the_limit_is_413(small: RunningServer) -> None:
    data = ipc_stream({"id": list(range(40_000))})
    resp = requests.post(f"{small.url}/v1/tables/too_big", data=chunked(data, 8192),
                         headers=ARROW)
    assert_too_large(resp, ARROW_LIMIT)
    assert not exists(small, "/v1/table/too_big")


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_body_identity_is_read_under_the_json_limit(small_auth: RunningServer,
                                                    declared: bool) -> None:
    payload = json.dumps({"identity": {"api_key": KEY}, "properties": {"b": "x" * 10_000}})
    resp = requests.post(f"{small_auth.url}/v1/namespace/n/create", headers=JSON,
                         data=payload.encode() if declared else chunked(payload.encode()))
    assert_too_large(resp, JSON_LIMIT)
    resp = requests.post(f"{small_auth.url}/v1/namespace/n/exists", json={},
                         headers={"x-api-key": KEY})
    assert resp.status_code == 404


def test_limits_come_from_the_config() -> None:
    config = ServerConfig(max_json_bytes="1MiB", max_arrow_bytes="2G")  # type: ignore[arg-type]
    assert (config.max_json_bytes, config.max_arrow_bytes) == (1 << 20, 2 << 30)
    assert "max_json_bytes=1048576" in repr(config)
    with pytest.raises(ValueError, match="not a size"):
        ServerConfig(max_json_bytes="lots")  # type: ignore[arg-type]
