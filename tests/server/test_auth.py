"""Credentials over HTTP: API keys, static and JWT bearer tokens, body identity, scopes.

Each authenticated server here is a module fixture of its own; the shared open `server`
fixture stays open.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.routing import Route

from nsframe.server import RunningServer, ServerConfig, create_app, serve_in_thread
from nsframe.server._http.metrics import METRICS_PATH
from nsframe.server._routes import ROUTES
from nsframe.server._security.credentials import Credentials
from nsframe.server._security.jwt import JWTVerifier
from nsframe.server._security.scopes import Operation, classify
from tests.support import assert_error, ipc_stream, read_ipc_file

FULL_KEY = "full-" + secrets.token_hex(16)
READ_KEY = "read-" + secrets.token_hex(16)
SALES_KEY = "sales-" + secrets.token_hex(16)
WRONG_KEY = "wrong-" + secrets.token_hex(16)
STATIC_TOKEN = "static-" + secrets.token_hex(16)
HS_SECRET = "hs-secret-" + secrets.token_hex(24)
AUDIENCE = "nsframe-tests"
ISSUER = "https://auth.example.test/"

API_KEYS = {
    FULL_KEY: {"name": "admin"},
    READ_KEY: {"name": "reader", "read_only": True},
    SALES_KEY: {"name": "sales-team", "namespace": "sales"},
}


def auth_config(root: Path, **jwt_settings: Any) -> ServerConfig:
    return ServerConfig.build(
        root, api_keys=API_KEYS, tokens={STATIC_TOKEN: {"name": "ci"}},
        jwt={"audience": AUDIENCE, "issuer": ISSUER, **jwt_settings},
    )


@pytest.fixture(scope="module")
def hs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    config = auth_config(tmp_path_factory.mktemp("auth-hs"), secret=HS_SECRET)
    with serve_in_thread(config=config) as running:
        yield running


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def rs_server(tmp_path_factory: pytest.TempPathFactory,
              rsa_key: rsa.RSAPrivateKey) -> Iterator[RunningServer]:
    pem = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    key_file = tmp_path_factory.mktemp("issuer") / "issuer.pem"
    key_file.write_bytes(pem)
    config = auth_config(tmp_path_factory.mktemp("auth-rs"), public_key_file=str(key_file))
    with serve_in_thread(config=config) as running:
        yield running


def claims(scope: str = "nsframe:write", **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "user-42", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 300,
            "scope": scope, **extra}


def hs_token(**overrides: Any) -> str:
    return jwt.encode(claims(**overrides), HS_SECRET, algorithm="HS256")


def key(value: str) -> dict[str, str]:
    return {"x-api-key": value}


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def create_ns(url: str, name: str, headers: dict[str, str], **body: Any) -> requests.Response:
    return requests.post(f"{url}/v1/namespace/{name}/create", json=body, headers=headers)


def ns_exists(url: str, name: str) -> bool:
    resp = requests.post(f"{url}/v1/namespace/{name}/exists", json={}, headers=key(FULL_KEY))
    assert resp.status_code in (200, 404), resp.text
    return resp.status_code == 200


def assert_unauthorized(resp: requests.Response) -> dict[str, Any]:
    body = assert_error(resp, 401, 16)
    assert body["type"] == "/errors/unauthorized-request"
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    return body


def assert_forbidden(resp: requests.Response) -> dict[str, Any]:
    body = assert_error(resp, 403, 15)
    assert body["type"] == "/errors/forbidden-request"
    return body


def unique(prefix: str = "n") -> str:
    return f"{prefix}{secrets.token_hex(5)}"


# ----------------------------------------------------------------- credential forms
def test_api_key_header_grants_access(hs_server: RunningServer) -> None:
    name = unique()
    resp = create_ns(hs_server.url, name, key(FULL_KEY), properties={"owner": "a"})
    assert resp.status_code == 200, resp.text
    described = requests.post(f"{hs_server.url}/v1/namespace/{name}/describe", json={},
                              headers=key(FULL_KEY))
    assert described.json()["properties"]["owner"] == "a"


def test_static_bearer_token_grants_access(hs_server: RunningServer) -> None:
    name = unique()
    assert create_ns(hs_server.url, name, bearer(STATIC_TOKEN)).status_code == 200
    assert ns_exists(hs_server.url, name)


def test_hs256_jwt_grants_its_scope(hs_server: RunningServer) -> None:
    name = unique()
    assert create_ns(hs_server.url, name, bearer(hs_token())).status_code == 200
    reader = bearer(hs_token(scope="openid nsframe:read"))
    listed = requests.get(f"{hs_server.url}/v1/namespace/$/list", headers=reader)
    assert listed.status_code == 200 and name in listed.json()["namespaces"]
    denied = create_ns(hs_server.url, unique(), reader)
    assert "read-only" in assert_forbidden(denied)["detail"]


def test_rs256_jwt_from_a_pem_key_file(rs_server: RunningServer,
                                       rsa_key: rsa.RSAPrivateKey) -> None:
    token = jwt.encode(claims(), rsa_key, algorithm="RS256")
    name = unique()
    assert create_ns(rs_server.url, name, bearer(token)).status_code == 200
    assert ns_exists(rs_server.url, name)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims(), other, algorithm="RS256")
    assert_unauthorized(create_ns(rs_server.url, unique(), bearer(forged)))


def test_rs256_server_refuses_hmac_tokens_signed_with_its_public_key(
    rs_server: RunningServer, rsa_key: rsa.RSAPrivateKey
) -> None:
    # Algorithm confusion: the public key is no secret, so HS256 must never be accepted.
    pem = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    token = _hmac_token_with(pem)
    name = unique()
    assert_unauthorized(create_ns(rs_server.url, name, bearer(token)))
    assert not ns_exists(rs_server.url, name)


def _hmac_token_with(secret: bytes) -> str:
    """An HS256 token built by hand (PyJWT refuses to sign with a PEM key as secret)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps(claims()).encode())
    signature = hmac.new(secret, f"{head}.{payload}".encode(), hashlib.sha256).digest()
    return f"{head}.{payload}.{b64(signature)}"


@pytest.mark.parametrize(
    ("overrides", "detail"),
    [
        ({"exp": int(time.time()) - 60}, "expired"),
        ({"aud": "someone-else"}, "audience"),
        ({"iss": "https://evil.example.test/"}, "issuer"),
        ({"exp": None}, "'exp'"),
    ],
)
def test_invalid_jwts_are_401(hs_server: RunningServer, overrides: dict[str, Any],
                              detail: str) -> None:
    payload = {k: v for k, v in claims(**overrides).items() if v is not None}
    token = jwt.encode(payload, HS_SECRET, algorithm="HS256")
    name = unique()
    resp = create_ns(hs_server.url, name, bearer(token))
    body = assert_unauthorized(resp)
    assert detail in body["detail"]
    assert 'error="invalid_token"' in resp.headers["WWW-Authenticate"]
    assert not ns_exists(hs_server.url, name)


def test_jwt_signed_with_another_secret_is_401(hs_server: RunningServer) -> None:
    token = jwt.encode(claims(), "another-secret-" + secrets.token_hex(16), algorithm="HS256")
    assert_unauthorized(create_ns(hs_server.url, unique(), bearer(token)))


def test_jwt_without_an_nsframe_scope_is_403(hs_server: RunningServer) -> None:
    resp = requests.get(f"{hs_server.url}/v1/namespace/$/list",
                        headers=bearer(hs_token(scope="openid profile")))
    assert "nsframe:read" in assert_forbidden(resp)["detail"]


def test_jwt_namespace_claim_limits_the_token(hs_server: RunningServer) -> None:
    token = bearer(hs_token(nsframe_namespace="team"))
    assert create_ns(hs_server.url, "team", token, mode="exist_ok").status_code == 200
    assert create_ns(hs_server.url, f"team${unique()}", token).status_code == 200
    assert_forbidden(create_ns(hs_server.url, unique(), token))


def test_body_identity_api_key_and_auth_token(hs_server: RunningServer) -> None:
    by_key, by_token = unique(), unique()
    resp = create_ns(hs_server.url, by_key, {}, identity={"api_key": FULL_KEY},
                     properties={"via": "body"})
    assert resp.status_code == 200, resp.text
    # The buffered body still reached the handler: the properties were stored.
    assert resp.json()["properties"]["via"] == "body"
    resp = create_ns(hs_server.url, by_token, {}, identity={"auth_token": hs_token()})
    assert resp.status_code == 200, resp.text
    assert ns_exists(hs_server.url, by_key) and ns_exists(hs_server.url, by_token)
    assert_unauthorized(create_ns(hs_server.url, unique(), {}, identity={"api_key": WRONG_KEY}))
    assert_unauthorized(create_ns(hs_server.url, unique(), {}, identity="not an object"))


def test_header_wins_over_body_identity(hs_server: RunningServer) -> None:
    name = unique()
    resp = create_ns(hs_server.url, name, key(READ_KEY), identity={"api_key": FULL_KEY})
    assert_forbidden(resp)
    resp = create_ns(hs_server.url, name, key(WRONG_KEY), identity={"api_key": FULL_KEY})
    assert_unauthorized(resp)
    assert not ns_exists(hs_server.url, name)


def test_arrow_inserts_stream_past_the_credential_check(hs_server: RunningServer) -> None:
    name = unique()
    assert create_ns(hs_server.url, name, key(FULL_KEY)).status_code == 200
    data = ipc_stream({"id": list(range(5000)), "v": [float(i) for i in range(5000)]})
    arrow = {"Content-Type": "application/vnd.apache.arrow.stream"}
    url = f"{hs_server.url}/v1/table/{name}$t/create"
    assert_unauthorized(requests.post(url, data=data, headers=arrow))
    chunks = (data[i:i + 4096] for i in range(0, len(data), 4096))
    resp = requests.post(url, data=chunks, headers={**arrow, **key(FULL_KEY)})
    assert resp.status_code == 200, resp.text
    count = requests.post(f"{hs_server.url}/v1/table/{name}$t/count_rows", json={},
                          headers=key(READ_KEY))
    assert count.json() == 5000


# ------------------------------------------------------------------------ scopes
def test_read_only_key_reads_but_cannot_write(hs_server: RunningServer) -> None:
    url, name = hs_server.url, unique()
    assert create_ns(url, name, key(FULL_KEY)).status_code == 200
    table = f"{url}/v1/table/{name}$t"
    resp = requests.post(f"{table}/create", data=ipc_stream({"id": [1, 2, 3]}),
                         headers={**ARROW, **key(FULL_KEY)})
    assert resp.status_code == 200, resp.text
    reader = key(READ_KEY)
    assert requests.post(f"{table}/describe", json={}, headers=reader).status_code == 200
    assert requests.post(f"{table}/count_rows", json={}, headers=reader).json() == 3
    listed = requests.get(f"{url}/v1/namespace/{name}/table/list", headers=reader)
    assert listed.json()["tables"] == ["t"]
    writes = [
        requests.post(f"{table}/insert", data=ipc_stream({"id": [4]}),
                      headers={**ARROW, **reader}),
        requests.post(f"{table}/delete", json={"predicate": "id > 0"}, headers=reader),
        requests.post(f"{table}/drop", json={}, headers=reader),
        requests.post(f"{url}/v1/table/{name}$u/declare", json={}, headers=reader),
        requests.post(f"{url}/v1/namespace/{name}/drop", json={}, headers=reader),
        requests.post(f"{url}/v1/tables/{unique()}", headers=reader),
    ]
    for resp in writes:
        assert_forbidden(resp)
    assert requests.post(f"{table}/count_rows", json={}, headers=reader).json() == 3
    assert ns_exists(url, name)


def test_prefix_limited_key_stays_in_its_namespace(hs_server: RunningServer) -> None:
    url, sales = hs_server.url, key(SALES_KEY)
    # Other tests of this module share "sales" (and "salesforce"): whoever comes first makes it.
    assert create_ns(url, "sales", key(FULL_KEY), mode="exist_ok").status_code == 200
    inside = f"sales${unique()}"
    assert create_ns(url, inside, sales).status_code == 200
    resp = requests.post(f"{url}/v1/table/{inside}$t/create", data=ipc_stream({"x": [1]}),
                         headers={**ARROW, **sales})
    assert resp.status_code == 200, resp.text
    # A different delimiter names the same table.
    dotted = inside.replace("$", ".")
    resp = requests.post(f"{url}/v1/table/{dotted}.t/count_rows?delimiter=.", json={},
                         headers=sales)
    assert resp.json() == 1
    outside = unique()
    for resp in (
        create_ns(url, outside, sales),
        create_ns(url, "salesforce", sales),
        requests.get(f"{url}/v1/namespace/$/list", headers=sales),
        requests.get(f"{url}/v1/table", headers=sales),
        requests.get(f"{url}/v1/tables", headers=sales),
        requests.post(f"{url}/v1/transaction/abc/describe", json={}, headers=sales),
    ):
        assert_forbidden(resp)
    assert not ns_exists(url, outside) and not ns_exists(url, "salesforce")


def table_ops(url: str, table: str, headers: dict[str, str],
              query: str = "") -> dict[str, requests.Response]:
    """query, insert, count_rows, restore and describe on ``table`` (version 1 exists)."""
    base = f"{url}/v1/table/{table}"

    def post(action: str, **kwargs: Any) -> requests.Response:
        return requests.post(f"{base}/{action}{query}", headers={**headers,
                             **kwargs.pop("headers", {})}, **kwargs)

    return {
        "query": post("query", json={"filter": "x > 0"}),
        "insert": post("insert", data=ipc_stream({"x": [2]}),
                       headers={"Content-Type": "application/vnd.apache.arrow.stream"}),
        "count_rows": post("count_rows", json={}),
        "restore": post("restore", json={"version": 1}),
        "describe": post("describe", json={}),
        "versions": post("version/list", json={}),
    }


def versions_of(url: str, table: str) -> list[int]:
    resp = requests.post(f"{url}/v1/table/{table}/version/list", json={}, headers=key(FULL_KEY))
    assert resp.status_code == 200, resp.text
    return [v["version"] for v in resp.json()["versions"]]


def test_prefix_limited_key_on_tables_inside_and_outside(hs_server: RunningServer) -> None:
    url, sales, admin = hs_server.url, key(SALES_KEY), key(FULL_KEY)
    arrow = {"Content-Type": "application/vnd.apache.arrow.stream"}
    assert create_ns(url, "sales", admin, mode="exist_ok").status_code == 200
    assert create_ns(url, "salesforce", admin, mode="exist_ok").status_code == 200
    inside, outside = f"sales${unique()}", unique()
    assert create_ns(url, inside, admin).status_code == 200
    assert create_ns(url, outside, admin).status_code == 200
    # Same-looking tables: one inside the key's namespace, three outside it.
    # No "f" in the salesforce table's own name: split at "f" below, it must give
    # exactly "sales" and "orce$t..." (a random "ff" made an empty part, a 400).
    tables_out = [f"{outside}$t", f"salesforce${unique('t').replace('f', '0')}", unique("top")]
    for table in [f"{inside}$t", *tables_out]:
        resp = requests.post(f"{url}/v1/table/{table}/create", data=ipc_stream({"x": [1]}),
                             headers={**arrow, **admin})
        assert resp.status_code == 200, resp.text

    done = table_ops(url, f"{inside}$t", sales)
    for op, resp in done.items():
        assert resp.status_code == 200, (op, resp.text)
    assert read_ipc_file(done["query"].content).column("x").to_pylist() == [1]
    assert done["insert"].json()["version"] == 2 and done["count_rows"].json() == 2
    assert done["restore"].json()["version"] == 3
    assert versions_of(url, f"{inside}$t") == [1, 2, 3]

    for table in tables_out:
        for op, resp in table_ops(url, table, sales).items():
            assert "limited to namespace 'sales'" in assert_forbidden(resp)["detail"], op
        assert versions_of(url, table) == [1]
    # Another delimiter, or several, cannot make an outside table look inside: the
    # scope must split the identifier exactly as the operation does.
    salesforce = tables_out[1]
    # The operation reads the last value: `$` names salesforce (403); `f` names table
    # 'orce$t..' inside sales, which does not exist (404); an empty one is refused (400)
    # by the scope check exactly as the operation would refuse it.
    for query, status in (("?delimiter=f&delimiter=$", 403), ("?delimiter=$&delimiter=f", 404),
                          ("?delimiter=f&delimiter=$&delimiter=", 400)):
        for resp in table_ops(url, salesforce, sales, query.replace("$", "%24")).values():
            assert_error(resp, status)
    for table in tables_out:
        assert versions_of(url, table) == [1]
        count = requests.post(f"{url}/v1/table/{table}/count_rows", json={}, headers=admin)
        assert count.json() == 1
    for ns in (outside, "salesforce"):
        listed = requests.get(f"{url}/v1/namespace/{ns}/table/list", headers=admin).json()
        assert len(listed["tables"]) == 1, listed


def test_open_server_needs_no_credentials(base_url: str, http: requests.Session) -> None:
    name = unique()
    assert http.post(f"{base_url}/v1/namespace/{name}/create", json={}).status_code == 200
    assert http.post(f"{base_url}/v1/namespace/{name}/exists", json={}).status_code == 200


# ----------------------------------------------------------- every route is guarded
SAMPLES = {"id": "walkns$walkt", "index_name": "idx", "table_name": "walkt"}


def starlette_of(app: Any) -> Starlette:
    while not isinstance(app, Starlette):
        app = app.app  # each middleware keeps the app it wraps as `.app`
    return app


def test_every_route_answers_401_without_valid_credentials(
    hs_server: RunningServer, tmp_path: Path
) -> None:
    routes = starlette_of(create_app(config=auth_config(tmp_path, secret=HS_SECRET))).routes
    assert len(routes) >= 15
    attempts: list[tuple[dict[str, str], dict[str, Any] | None]] = [
        ({}, None),
        (key(WRONG_KEY), None),
        (bearer(WRONG_KEY), None),
        ({"Authorization": f"Basic {FULL_KEY}"}, None),
        (bearer(hs_token(exp=int(time.time()) - 10)), None),
        ({}, {"identity": {"api_key": WRONG_KEY}}),
    ]
    checked = 0
    for route in routes:
        assert isinstance(route, Route), f"{route!r}: walk its routes here too"
        if route.path == METRICS_PATH:
            continue  # open to a probe unless metrics_require_auth (tests/server/test_metrics.py)
        path = route.path_format.format(**{p: SAMPLES[p] for p in route.param_convertors})
        for method in sorted(route.methods or ()):
            for suffix in ("", "/"):
                for headers, body in attempts:
                    resp = requests.request(method, hs_server.url + path + suffix,
                                            headers=headers, json=body)
                    if method == "HEAD":
                        assert resp.status_code == 401, (method, path)
                    else:
                        assert_unauthorized(resp)
                    checked += 1
    assert checked >= len(routes) * len(attempts) * 2
    assert not ns_exists(hs_server.url, "walkns")


# Every (method, route) of the server, classified by hand rather than by
# `_scopes.classify`, so a write that the server took for a read fails here. A write
# changes data, metadata, tags, branches, indexes or the catalog. HEAD goes with GET.
# A new route fails `test_read_only_key_on_every_route` until it is added to one list.
# The server's own routes outside the contract's /v1 space: no scope applies (any key may
# scrape /metrics, and no key unless metrics_require_auth: tests/server/test_metrics.py).
SERVICE_ROUTES = frozenset({("GET", METRICS_PATH)})
READ_ROUTES = frozenset({
    ("GET", "/v1/namespace/{id}/list"),
    ("POST", "/v1/namespace/{id}/list"),
    ("POST", "/v1/namespace/{id}/describe"),
    ("POST", "/v1/namespace/{id}/exists"),
    ("GET", "/v1/namespace/{id}/table/list"),
    ("POST", "/v1/namespace/{id}/table/list"),
    ("GET", "/v1/table"),
    ("GET", "/v1/tables"),
    ("POST", "/v1/table/{id}/describe"),
    ("POST", "/v1/table/{id}/exists"),
    ("GET", "/v1/table/{id}/count_rows"),
    ("POST", "/v1/table/{id}/count_rows"),
    ("POST", "/v1/table/{id}/query"),
    ("GET", "/v1/table/{id}/stats"),
    ("POST", "/v1/table/{id}/stats"),
    ("GET", "/v1/table/{id}/index/list"),
    ("POST", "/v1/table/{id}/index/list"),
    ("GET", "/v1/table/{id}/index/{index_name}/stats"),
    ("POST", "/v1/table/{id}/index/{index_name}/stats"),
    ("GET", "/v1/table/{id}/version/list"),
    ("POST", "/v1/table/{id}/version/list"),
    ("POST", "/v1/table/{id}/version/describe"),
    ("GET", "/v1/table/{id}/tags/list"),
    ("POST", "/v1/table/{id}/tags/list"),
    ("POST", "/v1/table/{id}/tags/version"),
    ("GET", "/v1/table/{id}/branches/list"),
    ("POST", "/v1/table/{id}/branches/list"),
    ("POST", "/v1/transaction/{id}/describe"),
    ("POST", "/v1/table/{id}/explain_plan"),
    ("POST", "/v1/table/{id}/analyze_plan"),
})
WRITE_ROUTES = frozenset({
    ("POST", "/v1/namespace/{id}/create"),
    ("POST", "/v1/namespace/{id}/drop"),
    ("POST", "/v1/table/{id}/create"),
    ("POST", "/v1/table/{id}/declare"),
    ("POST", "/v1/table/{id}/drop"),
    ("POST", "/v1/table/{id}/insert"),
    ("POST", "/v1/table/{id}/delete"),
    ("POST", "/v1/table/{id}/restore"),
    ("POST", "/v1/table/{id}/optimize"),
    ("POST", "/v1/table/{id}/create_index"),
    ("POST", "/v1/table/{id}/create_scalar_index"),
    ("POST", "/v1/table/{id}/index/{index_name}/drop"),
    ("POST", "/v1/table/{id}/tags/create"),
    ("POST", "/v1/table/{id}/tags/update"),
    ("POST", "/v1/table/{id}/tags/delete"),
    ("POST", "/v1/table/{id}/branches/create"),
    ("POST", "/v1/table/{id}/branches/delete"),
    ("POST", "/v1/tables/{table_name}"),
    ("POST", "/v1/table/{id}/merge_insert"),
    ("POST", "/v1/table/{id}/update"),
    ("POST", "/v1/table/{id}/add_columns"),
    ("POST", "/v1/table/{id}/alter_columns"),
    ("POST", "/v1/table/{id}/drop_columns"),
    ("POST", "/v1/table/{id}/schema_metadata/update"),
    ("POST", "/v1/table/{id}/rename"),
    ("POST", "/v1/table/{id}/register"),
    ("POST", "/v1/table/{id}/deregister"),
    ("POST", "/v1/table/{id}/version/create"),
    ("POST", "/v1/table/{id}/version/delete"),
})
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


def route_pairs(tmp_path: Path) -> set[tuple[str, str]]:
    """(method, path template) of every route of the app; HEAD only beside GET."""
    pairs: set[tuple[str, str]] = set()
    for route in starlette_of(create_app(config=auth_config(tmp_path, secret=HS_SECRET))).routes:
        assert isinstance(route, Route)
        methods = route.methods or set()
        assert "HEAD" not in methods or "GET" in methods, route.path_format
        pairs |= {(m, route.path_format) for m in methods - {"HEAD"}}
    return pairs


# Routes answered 404 Unsupported whatever the key (docs/compatibility.md).
UNSUPPORTED_ROUTES = frozenset({
    ("POST", "/v1/table/{id}/version/create"),
    ("POST", "/v1/table/{id}/version/delete"),
})


def walk_request(method: str, template: str, ns: str, txn: str,
                 location: str = "") -> tuple[str, dict[str, Any]]:
    """A request to ``template`` that would succeed with a full-access key: the path and
    the keyword arguments of `requests.request`. ``location``: where the table that the
    walk deregisters lives, for the register that follows."""
    table = f"{ns}$t"
    ids = {  # writes that make something get a name of their own
        "/v1/namespace/{id}/create": f"{ns}$child",
        "/v1/namespace/{id}/drop": f"{ns}$empty",
        "/v1/table/{id}/create": f"{ns}$new",
        "/v1/table/{id}/declare": f"{ns}$declared",
        "/v1/table/{id}/rename": f"{ns}$mv",
        "/v1/table/{id}/deregister": f"{ns}$gone",
        "/v1/table/{id}/register": f"{ns}$back",
        "/v1/transaction/{id}/describe": txn,
    }
    ident = ids.get(template, ns if template.startswith("/v1/namespace/") else table)
    path = template.format(id=ident, index_name="idx", table_name=f"{ns}$ext")
    arrow = {"data": ipc_stream({"id": [7, 8]}), "headers": ARROW}
    merge = {**arrow, "params": {"on": "id", "when_not_matched_insert_all": "true"}}
    kwargs: dict[str, Any] = {
        "/v1/table/{id}/create": arrow,
        "/v1/table/{id}/insert": arrow,
        "/v1/table/{id}/merge_insert": merge,
        "/v1/tables/{table_name}": arrow,
    }.get(template, {"json": {}} if method == "POST" else {})
    bodies: dict[str, dict[str, Any]] = {
        "/v1/table/{id}/delete": {"predicate": "id > 0"},
        "/v1/table/{id}/query": {"filter": "id > 1"},
        "/v1/table/{id}/restore": {"version": 2},
        "/v1/table/{id}/create_index": {"column": "id", "index_type": "BTREE", "name": "i2"},
        "/v1/table/{id}/create_scalar_index": {"column": "id", "index_type": "BITMAP",
                                               "name": "i3"},
        "/v1/table/{id}/tags/create": {"tag": "t2", "version": 1},
        "/v1/table/{id}/tags/update": {"tag": "v1", "version": 2},
        "/v1/table/{id}/tags/delete": {"tag": "v1"},
        "/v1/table/{id}/tags/version": {"tag": "v1"},
        "/v1/table/{id}/branches/create": {"name": "b2"},
        "/v1/table/{id}/branches/delete": {"name": "keep"},
        "/v1/table/{id}/version/describe": {"version": 1},
        "/v1/table/{id}/explain_plan": {"query": {"filter": "id > 1"}},
        "/v1/table/{id}/analyze_plan": {"filter": "id > 1"},
        "/v1/table/{id}/update": {"updates": [["id", "id + 10"]], "predicate": "id > 7"},
        "/v1/table/{id}/add_columns": {"new_columns": [{"name": "x", "expression": "id"}]},
        "/v1/table/{id}/alter_columns": {"alterations": [{"path": "x", "rename": "y"}]},
        "/v1/table/{id}/drop_columns": {"columns": ["y"]},
        "/v1/table/{id}/schema_metadata/update": {"owner": "ana"},
        "/v1/table/{id}/rename": {"new_table_name": "moved"},
        "/v1/table/{id}/register": {"location": location},
    }
    if template in bodies:
        kwargs = {"json": bodies[template]}
    return path, kwargs


def table_state(url: str, ns: str) -> dict[str, Any]:
    """Everything a write on the walk could change, read with the full-access key."""
    admin, table = key(FULL_KEY), f"{url}/v1/table/{ns}$t"

    def get(path: str, member: str) -> Any:
        resp = requests.post(path, json={}, headers=admin)
        assert resp.status_code == 200, resp.text
        return resp.json()[member]

    return {
        "namespaces": sorted(get(f"{url}/v1/namespace/{ns}/list", "namespaces")),
        "tables": sorted(get(f"{url}/v1/namespace/{ns}/table/list", "tables")),
        "all tables": sorted(t for t in requests.get(f"{url}/v1/tables", headers=admin)
                             .json()["tables"] if t.startswith(ns)),
        "versions": [v["version"] for v in get(f"{table}/version/list", "versions")],
        "tags": get(f"{table}/tags/list", "tags"),
        "branches": sorted(get(f"{table}/branches/list", "branches")),
        "indexes": sorted(i["index_name"] for i in get(f"{table}/index/list", "indexes")),
        "rows": requests.post(f"{table}/count_rows", json={}, headers=admin).json(),
    }


def test_read_only_key_on_every_route(hs_server: RunningServer, tmp_path: Path) -> None:
    assert route_pairs(tmp_path) == READ_ROUTES | WRITE_ROUTES | SERVICE_ROUTES, (
        "classify the new route by hand in READ_ROUTES or WRITE_ROUTES"
    )
    assert not READ_ROUTES & WRITE_ROUTES
    url, admin, ns = hs_server.url, key(FULL_KEY), unique("ro")
    # A table with everything the walk reads or would change.
    for made in (create_ns(url, ns, admin), create_ns(url, f"{ns}$empty", admin),
                 requests.post(f"{url}/v1/table/{ns}$t/create", headers={**ARROW, **admin},
                               data=ipc_stream({"id": [1, 2, 3]}))):
        assert made.status_code == 200, made.text
    for other in ("mv", "gone"):  # tables the walk renames and deregisters
        made = requests.post(f"{url}/v1/table/{ns}${other}/create", headers={**ARROW, **admin},
                             data=ipc_stream({"id": [1]}))
        assert made.status_code == 200, made.text
    gone = requests.post(f"{url}/v1/table/{ns}$gone/describe", json={}, headers=admin)
    location = gone.json()["location"]
    table = f"{url}/v1/table/{ns}$t"
    built = requests.post(f"{table}/create_index", headers=admin,
                          json={"column": "id", "index_type": "BTREE", "name": "idx"})
    assert built.status_code == 200, built.text
    for action, body in (("tags/create", {"tag": "v1", "version": 1}),
                         ("branches/create", {"name": "keep"})):
        assert requests.post(f"{table}/{action}", json=body, headers=admin).status_code == 200
    before = table_state(url, ns)
    assert before["versions"] == [1, 2] and before["indexes"] == ["idx"]

    reader = key(READ_KEY)
    for method, template in sorted(READ_ROUTES | WRITE_ROUTES):
        path, kwargs = walk_request(method, template, ns, built.json()["transaction_id"],
                                    location)
        headers = {**kwargs.pop("headers", {}), **reader}
        resp = requests.request(method, url + path, headers=headers, **kwargs)
        if (method, template) in WRITE_ROUTES:
            body = assert_forbidden(resp)
            assert "read-only" in body["detail"], (method, path)
            assert classify(ROUTES, http_scope(method, path)) == Operation(
                True, ns_ident(path), "$"), (method, template)
        else:
            assert resp.status_code == 200, (method, path, resp.text)
            if method == "GET":
                head = requests.head(url + path, headers=reader)
                assert head.status_code == 200, (path, head.status_code)
    assert table_state(url, ns) == before
    # The refused requests were real writes: with the full-access key each succeeds
    # (removals after the writes that need what they remove, the table's drop last).
    txn = built.json()["transaction_id"]

    def removals_last(pair: tuple[str, str]) -> tuple[bool, bool, str]:
        removal = pair[1].endswith(("/drop", "/delete"))
        return removal, pair[1] == "/v1/table/{id}/drop", pair[1]

    for method, template in sorted(WRITE_ROUTES, key=removals_last):
        path, kwargs = walk_request(method, template, ns, txn, location)
        headers = {**kwargs.pop("headers", {}), **admin}
        resp = requests.request(method, url + path, headers=headers, **kwargs)
        expected = 404 if (method, template) in UNSUPPORTED_ROUTES else 200
        assert resp.status_code == expected, (method, path, resp.text)
    assert requests.post(f"{table}/exists", json={}, headers=admin).status_code == 404
    assert ns_exists(url, f"{ns}$child") and not ns_exists(url, f"{ns}$empty")


def http_scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
            "query_string": b"", "headers": []}


def ns_ident(path: str) -> list[str] | None:
    """The identifier a walked path addresses, as the scopes should read it."""
    parts = path.split("/")
    if parts[2] == "transaction":
        return None
    if parts[2] == "tables" and len(parts) == 3:
        return []
    return parts[3].split("$") if len(parts) > 3 else []


def test_every_route_declares_read_or_write() -> None:
    # The route table is the only place that says what a route does; the scopes read it.
    assert {(m, r.template) for r in ROUTES for m in r.methods or () if m != "HEAD"} == \
        READ_ROUTES | WRITE_ROUTES
    for route in ROUTES:
        assert route.access in ("read", "write"), route.template
        methods = sorted((route.methods or set()) - {"HEAD"})
        for method in methods:
            expected = "read" if (method, route.template) in READ_ROUTES else "write"
            assert route.access == expected, (method, route.template)
        path = route.template.format(**{p: SAMPLES[p] for p in route.param_convertors})
        op = classify(ROUTES, http_scope(methods[0], path))
        assert op is not None and op.write == route.write, path
        assert (op.ident is None) == (not route.namespaced), path


def test_made_up_sub_path_under_every_route_is_unsupported(server: RunningServer,
                                                           http: requests.Session) -> None:
    # `{id}` matches slashes (to report an encoded slash in a name), yet a literal extra
    # segment is no operation: the router's 404 with code 0, never a neighbour's 400.
    checked = 0
    for route in ROUTES:
        if "{id}" not in route.template:
            continue
        for extra in ("version/create", "x/y"):
            path = route.template.replace("{id}", f"t/{extra}").format(index_name="i")
            for method in sorted((route.methods or set()) - {"HEAD"}):
                resp = http.request(method, server.url + path, json={})
                body = assert_error(resp, 404, code=0)
                assert "no operation" in body["detail"], (method, path, body)
                checked += 1
    assert checked > 60


# ----------------------------------------------------------- the embedded server
def test_embedded_server_generates_its_own_token(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, token="generate") as running:
        assert running.token and len(running.token) >= 32
        assert running.token not in repr(running) and running.token not in str(running)
        assert_unauthorized(create_ns(running.url, "n", {}))
        assert create_ns(running.url, "n", bearer(running.token)).status_code == 200
    config = ServerConfig.embedded(tmp_path)
    assert config.own_token and config.own_token in config.tokens
    assert config.credentials_configured and config.own_token not in repr(config)


# ---------------------------------------------------------------- no secret leaks
def test_no_secret_in_logs_error_bodies_or_repr(
    hs_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    valid_jwt, expired_jwt = hs_token(), hs_token(exp=int(time.time()) - 60)
    secret_values = [FULL_KEY, READ_KEY, SALES_KEY, WRONG_KEY, STATIC_TOKEN, HS_SECRET,
                     valid_jwt, expired_jwt]
    texts: list[str] = []
    caplog.set_level(logging.DEBUG)
    url = hs_server.url
    for headers in (key(FULL_KEY), key(WRONG_KEY), key(READ_KEY), bearer(STATIC_TOKEN),
                    bearer(valid_jwt), bearer(expired_jwt), bearer(WRONG_KEY),
                    {"x-service-ctx-api_key": FULL_KEY, "x-service-ctx-trace": "t1"}):
        for resp in (
            create_ns(url, unique(), headers),
            create_ns(url, unique(), {}, identity={"api_key": WRONG_KEY,
                                                   "auth_token": expired_jwt}),
            requests.post(f"{url}/v1/table/missing$t/describe", json={}, headers=headers),
            requests.get(f"{url}/v1/nothing-here", headers=headers),
        ):
            texts.append(resp.text)
            texts.append(repr(dict(resp.headers)))
    access = [r for r in caplog.records if r.name == "nsframe.server.access"]
    assert any(" 401 " in r.getMessage() for r in access)
    assert any("by=admin" in r.getMessage() for r in access)
    assert any("<redacted>" in r.getMessage() for r in access)
    texts += [r.getMessage() for r in caplog.records]
    texts += [repr(r.__dict__) for r in caplog.records]
    texts += [repr(hs_server), str(hs_server), repr(hs_server.config), str(hs_server.config)]
    everything = "\n".join(texts)
    for secret in secret_values:
        assert secret not in everything


def test_objects_holding_secrets_never_show_them_in_repr(tmp_path: Path) -> None:
    config = auth_config(tmp_path, secret=HS_SECRET)
    secret_values = [FULL_KEY, READ_KEY, SALES_KEY, STATIC_TOKEN, HS_SECRET]
    # The secrets are really there, so a default (dataclass) repr would print them.
    held = repr((config.api_keys, config.tokens, config.jwt))
    assert all(secret in held for secret in secret_values)
    credentials = Credentials(config)
    assert credentials.authenticate(FULL_KEY, None).name == "admin"
    verifier = JWTVerifier.from_settings(config.jwt or {})
    embedded = ServerConfig.embedded(tmp_path, api_keys=[FULL_KEY])
    assert embedded.own_token
    digests = [hashlib.sha256(s.encode()).digest() for s in secret_values]
    for shown in (repr(config), str(config), f"{config!r:>10}", repr(credentials),
                  str(credentials), repr(verifier), repr(embedded), str(embedded),
                  repr([config, credentials])):
        for secret in [*secret_values, embedded.own_token]:
            assert secret not in shown, shown
        for digest in digests:
            assert repr(digest) not in shown and digest.hex() not in shown, shown
    assert repr(credentials) == "Credentials(api_keys=<3>, tokens=<1>, jwt=True)"
    assert "api_keys=<3 configured>" in repr(config) and "jwt=<configured>" in repr(config)
