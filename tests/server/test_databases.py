"""Several databases behind one server: the x-service-database header and the host name."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from tests.support import ARROW_HEADERS, assert_error, ipc_stream

KEY = "db-" + secrets.token_hex(16)
SALES_ONLY_KEY = "sales-only-" + secrets.token_hex(16)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {name: tmp_path_factory.mktemp(f"db-{name or 'default'}")
            for name in ("", "sales", "eu")}


@pytest.fixture(scope="module")
def multi(roots: dict[str, Path]) -> Iterator[RunningServer]:
    with serve_in_thread(
        roots[""], databases={"sales": roots["sales"], "eu": roots["eu"]},
        database_from_host=True,
        api_keys={KEY: {}, SALES_ONLY_KEY: {"databases": ["sales"]}},
        # The host names that pick a database must be names the server answers to.
        allow_hosts=["*.example.test"],
    ) as running:
        yield running


def call(server: RunningServer, path: str, *, database: str | None = None,
         host: str | None = None, key: str = KEY, **kwargs: Any) -> requests.Response:
    headers = {"x-api-key": key, **kwargs.pop("headers", {})}
    if database is not None:
        headers["x-service-database"] = database
    if host is not None:
        headers["Host"] = host
    if "data" not in kwargs and "json" not in kwargs:
        kwargs["json"] = {}
    return requests.post(f"{server.url}{path}", headers=headers, **kwargs)


def exists(server: RunningServer, name: str, **where: Any) -> bool:
    resp = call(server, f"/v1/namespace/{name}/exists", **where)
    assert resp.status_code in (200, 404), resp.text
    return resp.status_code == 200


def ns_dir(root: Path, name: str) -> Path:
    """The catalog entry of a namespace of the root namespace (docs/storage.md)."""
    return root / "_catalog" / "root" / "ns" / name


def test_header_picks_the_database(multi: RunningServer, roots: dict[str, Path]) -> None:
    assert call(multi, "/v1/namespace/ledger/create", database="sales").status_code == 200
    assert ns_dir(roots["sales"], "ledger").is_dir()
    assert not ns_dir(roots[""], "ledger").exists()
    assert not ns_dir(roots["eu"], "ledger").exists()
    resp = call(multi, "/v1/table/ledger$t/create", database="sales",
                data=ipc_stream({"amount": [10, 20, 30]}), headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    assert call(multi, "/v1/table/ledger$t/count_rows", database="sales").json() == 3
    assert exists(multi, "ledger", database="sales")
    assert not exists(multi, "ledger")
    assert not exists(multi, "ledger", database="eu")
    resp = call(multi, "/v1/table/ledger$t/count_rows")
    assert_error(resp, 404)


def test_host_name_picks_the_database_without_header(multi: RunningServer,
                                                     roots: dict[str, Path]) -> None:
    host = f"eu.db.example.test:{multi.port}"
    assert call(multi, "/v1/namespace/paris/create", host=host).status_code == 200
    assert ns_dir(roots["eu"], "paris").is_dir() and not ns_dir(roots[""], "paris").exists()
    assert exists(multi, "paris", host="eu.example.test")
    assert exists(multi, "paris", database="eu")
    assert not exists(multi, "paris")
    # The header wins over the host name.
    assert not exists(multi, "paris", host="eu.example.test", database="sales")


def test_ip_and_single_label_hosts_use_the_default_database(multi: RunningServer) -> None:
    assert call(multi, "/v1/namespace/home/create").status_code == 200
    for host in ("127.0.0.1", f"127.0.0.1:{multi.port}", "localhost", "[::1]:80"):
        assert exists(multi, "home", host=host), host


def test_unknown_database_is_404(multi: RunningServer, roots: dict[str, Path]) -> None:
    body = assert_error(call(multi, "/v1/namespace/x/create", database="nope"), 404)
    assert "'nope'" in body["detail"] and "x-service-database" in body["detail"]
    body = assert_error(call(multi, "/v1/namespace/x/create", host="nope.example.test"), 404)
    assert "host name" in body["detail"]
    assert not any(ns_dir(root, "x").exists() for root in roots.values())


def test_lancedb_database_header_picks_only_known_databases(multi: RunningServer) -> None:
    assert call(multi, "/v1/namespace/alias/create",
                headers={"x-lancedb-database": "sales"}).status_code == 200
    assert exists(multi, "alias", database="sales") and not exists(multi, "alias")
    # LanceDB clients always send their db:// name: an unknown one means the default root.
    assert call(multi, "/v1/namespace/alias2/create",
                headers={"x-lancedb-database": "my-lancedb"}).status_code == 200
    assert exists(multi, "alias2") and not exists(multi, "alias2", database="sales")


def test_key_limited_to_a_database(multi: RunningServer) -> None:
    resp = call(multi, "/v1/namespace/mine/create", database="sales", key=SALES_ONLY_KEY)
    assert resp.status_code == 200
    resp = call(multi, "/v1/namespace/mine/create", key=SALES_ONLY_KEY)
    assert "default database" in assert_error(resp, 403, 15)["detail"]
    assert_error(call(multi, "/v1/namespace/mine/create", database="eu", key=SALES_ONLY_KEY),
                 403, 15)
    assert not exists(multi, "mine") and not exists(multi, "mine", database="eu")


def test_tables_listing_is_per_database(multi: RunningServer) -> None:
    for database, name in (("sales", "s_only"), ("eu", "e_only")):
        resp = requests.post(f"{multi.url}/v1/tables/{name}", data=ipc_stream({"a": [1]}),
                             headers={"x-api-key": KEY, "x-service-database": database,
                                      **ARROW_HEADERS})
        assert resp.status_code == 200, resp.text
    sales = requests.get(f"{multi.url}/v1/tables",
                         headers={"x-api-key": KEY, "x-service-database": "sales"}).json()
    eu = requests.get(f"{multi.url}/v1/tables",
                      headers={"x-api-key": KEY, "Host": "eu.example.test"}).json()
    assert "s_only" in sales["tables"] and "e_only" not in sales["tables"]
    assert "e_only" in eu["tables"] and "s_only" not in eu["tables"]


def test_host_name_is_ignored_without_database_from_host(tmp_path: Path) -> None:
    name = f"h{secrets.token_hex(4)}"
    with serve_in_thread(tmp_path / "main", databases={"sales": tmp_path / "sales"},
                         allow_hosts=["sales.example.test"]) as server:
        resp = requests.post(f"{server.url}/v1/namespace/{name}/create", json={},
                             headers={"Host": "sales.example.test"})
        assert resp.status_code == 200
        resp = requests.post(f"{server.url}/v1/namespace/{name}/exists", json={})
        assert resp.status_code == 200
