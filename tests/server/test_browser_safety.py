"""Browser safety on every server, open or not (issue point 3).

Before: any web page could delete rows from `nsframe serve ./data` with
fetch(url, {method: "POST", mode: "no-cors", body: '{"predicate":"true"}'}) (sent as
text/plain), and a read with `Host: evil.example` (DNS rebinding) answered 200.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from nsframe.server._config_file import config_from_argv
from tests.support import ARROW_HEADERS, assert_error, ipc_stream

APP = "https://app.example.com"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The default open server, as `nsframe serve ./data` runs it."""
    with serve_in_thread(tmp_path_factory.mktemp("browser")) as running:
        resp = requests.post(f"{running.url}/v1/namespace/prod/create", json={})
        assert resp.status_code == 200
        resp = requests.post(f"{running.url}/v1/table/prod$t/create",
                             data=ipc_stream({"id": [1, 2, 3]}), headers=ARROW_HEADERS)
        assert resp.status_code == 200
        yield running


def count(server: RunningServer) -> int:
    n: int = requests.post(f"{server.url}/v1/table/prod$t/count_rows", json={}).json()
    return n


# ----------------------------------------------------------------- media types
@pytest.mark.parametrize("content_type", [
    None, "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x", "application/vnd.apache.arrow.stream",
])
def test_json_routes_take_only_json(open_server: RunningServer,
                                    content_type: str | None) -> None:
    """The issue's fetch: a simple cross-site POST of JSON as text/plain deleted rows."""
    headers = {"Content-Type": content_type} if content_type else {}
    resp = requests.post(f"{open_server.url}/v1/table/prod$t/delete",
                         data=b'{"predicate":"true"}', headers=headers)
    body = assert_error(resp, 415, 13)
    assert body["type"] == "/errors/unsupported-media-type"
    assert "application/json" in body["detail"]
    assert count(open_server) == 3


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "application/json", "application/x-www-form-urlencoded",
])
def test_arrow_routes_take_only_arrow(open_server: RunningServer,
                                      content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    resp = requests.post(f"{open_server.url}/v1/table/prod$t/insert",
                         data=ipc_stream({"id": [9]}), headers=headers)
    assert "application/vnd.apache.arrow.stream" in assert_error(resp, 415, 13)["detail"]
    assert count(open_server) == 3


def test_json_with_parameters_and_bodyless_posts_pass(open_server: RunningServer) -> None:
    resp = requests.post(f"{open_server.url}/v1/table/prod$t/count_rows",
                         data=b'{"predicate": "id > 1"}',
                         headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert resp.json() == 2
    # Some clients send POSTs with no body and no content type.
    for path in ("/v1/table/prod$t/describe", "/v1/namespace/prod/exists",
                 "/v1/table/prod$t/count_rows"):
        resp = requests.post(f"{open_server.url}{path}")
        assert resp.status_code == 200, (path, resp.text)
    assert requests.get(f"{open_server.url}/v1/namespace/prod/table/list").status_code == 200


# ------------------------------------------------------------------- Host, Origin
@pytest.mark.parametrize("host", ["evil.example", "evil.example:2333", "127.0.0.1.evil.example",
                                  "10.0.0.7", "[fe80::1]:80"])
def test_a_foreign_host_is_refused(open_server: RunningServer, host: str) -> None:
    """DNS rebinding: the page's own name still arrives in the Host header."""
    for resp in (requests.post(f"{open_server.url}/v1/table/prod$t/describe", json={},
                               headers={"Host": host}),
                 requests.post(f"{open_server.url}/v1/namespace/prod/drop",
                               json={"behavior": "cascade"}, headers={"Host": host})):
        assert "--allow-host" in assert_error(resp, 400, 13)["detail"]
    assert count(open_server) == 3


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST:2333", "[::1]:1",
                                  "127.0.0.2:80"])
def test_loopback_hosts_pass(open_server: RunningServer, host: str) -> None:
    resp = requests.post(f"{open_server.url}/v1/table/prod$t/describe", json={},
                         headers={"Host": host})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://localhost:3000",
                                    "http://127.0.0.1"])
def test_a_foreign_origin_is_refused(open_server: RunningServer, origin: str) -> None:
    for path, body in (("/v1/table/prod$t/delete", {"predicate": "true"}),
                       ("/v1/table/prod$t/describe", {})):
        resp = requests.post(f"{open_server.url}{path}", json=body, headers={"Origin": origin})
        assert "--allow-origin" in assert_error(resp, 403, 15)["detail"]
        assert "access-control-allow-origin" not in resp.headers
    assert count(open_server) == 3


def test_the_servers_own_origin_passes(open_server: RunningServer) -> None:
    resp = requests.post(f"{open_server.url}/v1/table/prod$t/describe", json={},
                         headers={"Origin": open_server.url})
    assert resp.status_code == 200, resp.text


def test_allowed_hosts_and_origins(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, allow_hosts=["data.example.org", "*.lan.example"],
                         allow_origins=[APP]) as server:
        url = f"{server.url}/v1/namespace/$/list"
        for host in ("data.example.org", "a.lan.example:8080", "b.c.lan.example"):
            assert requests.get(url, headers={"Host": host}).status_code == 200, host
        assert_error(requests.get(url, headers={"Host": "lan.example"}), 400)
        resp = requests.get(url, headers={"Origin": APP})
        assert resp.status_code == 200
        assert resp.headers["access-control-allow-origin"] == APP
        # A page of the allowed origin asks first (JSON is not a "simple" type).
        preflight = requests.options(url.replace("$/list", "x/create"), headers={
            "Origin": APP, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key"})
        assert preflight.status_code == 200
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert_error(requests.get(url, headers={"Origin": "https://other.example"}), 403)


def test_any_host_with_a_star(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, allow_hosts=["*"]) as server:
        resp = requests.get(f"{server.url}/v1/namespace/$/list", headers={"Host": "x.y"})
        assert resp.status_code == 200


def test_an_authenticated_server_checks_host_and_origin_first(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, api_keys=["k" * 20]) as server:
        url = f"{server.url}/v1/namespace/$/list"
        assert_error(requests.get(url, headers={"Host": "evil.example"}), 400)
        assert_error(requests.get(url, headers={"Origin": "https://evil.example"}), 403)
        assert_error(requests.get(url), 401)


def test_the_cli_takes_hosts_and_origins() -> None:
    config = config_from_argv([
        "/tmp/x", "--host", "10.1.2.3", "--api-key", "k" * 20,
        "--allow-host", "db.example.com", "--allow-origin", APP, "--query-timeout", "5"], {})
    assert config.allow_hosts == ["db.example.com", "10.1.2.3"]
    assert config.allow_origins == [APP]
    assert config.limits.query_timeout == 5.0
    wildcard = config_from_argv(["--host", "0.0.0.0"], {})
    assert wildcard.allow_hosts == []
