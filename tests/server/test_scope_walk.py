"""Scopes cover every name a request names: the path's identifier and every identifier,
namespace or location a member of its request model names (issue 23, point 2).

A credential limited to namespace `a` may not reach `b` through a body member, e.g. a
rename of `a$t` whose target is in `b`.
"""

from __future__ import annotations

import re
import secrets
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
import requests

from nsframe.server import RunningServer, ServerConfig, serve_in_thread
from nsframe.server._http import names
from nsframe.server._http.routing import ApiRoute
from nsframe.server._http.validation import Envelope
from nsframe.server._models.registry import RegisterTableRequest, RenameTableRequest
from nsframe.server._routes import ROUTES
from tests.server.test_auth import (
    ARROW,
    AUDIENCE,
    FULL_KEY,
    HS_SECRET,
    ISSUER,
    assert_forbidden,
    bearer,
    hs_token,
    key,
    ns_ident,
    table_state,
    walk_request,
)
from tests.support import ipc_stream

A_KEY = "a-" + secrets.token_hex(16)
AT_KEY = "at-" + secrets.token_hex(16)


def scoped_config(root: Path) -> ServerConfig:
    return ServerConfig.build(
        root,
        api_keys={FULL_KEY: {"name": "admin"}, A_KEY: {"name": "a-team", "namespace": "a"},
                  AT_KEY: {"name": "a-t-only", "namespace": ["a", "t"]}},
        jwt={"audience": AUDIENCE, "issuer": ISSUER, "secret": HS_SECRET},
    )


@pytest.fixture(scope="module")
def scoped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(config=scoped_config(tmp_path_factory.mktemp("scopes"))) as running:
        yield running


def post(url: str, path: str, credential: dict[str, str], **kwargs: Any
         ) -> requests.Response:
    return requests.post(url + path, headers={**kwargs.pop("headers", {}), **credential},
                         **kwargs)


def make_table(url: str, ident: str) -> None:
    ns = ident.rsplit("$", 1)[0]
    made = post(url, f"/v1/namespace/{ns}/create", key(FULL_KEY), json={"mode": "exist_ok"})
    assert made.status_code == 200, made.text
    made = post(url, f"/v1/table/{ident}/create", key(FULL_KEY), headers=ARROW,
                params={"mode": "exist_ok"}, data=ipc_stream({"id": [1, 2, 3]}))
    assert made.status_code == 200, made.text


def tables_of(url: str, ns: str) -> list[str]:
    resp = requests.get(f"{url}/v1/namespace/{ns}/table/list", headers=key(FULL_KEY))
    assert resp.status_code == 200, resp.text
    return sorted(resp.json()["tables"])


# ------------------------------------------------------------- the reported case
@pytest.mark.parametrize("credential", ["api key", "jwt"])
def test_rename_into_another_namespace_is_403(scoped_server: RunningServer,
                                              credential: str) -> None:
    url = scoped_server.url
    table = f"a${secrets.token_hex(4)}"
    make_table(url, table)
    make_table(url, "b$keep")
    headers = key(A_KEY) if credential == "api key" else \
        bearer(hs_token(nsframe_namespace=["a"]))
    before = tables_of(url, "b")
    planted = "planted" + credential[0]
    resp = post(url, f"/v1/table/{table}/rename", headers,
                json={"new_table_name": planted, "new_namespace_id": ["b"]})
    assert f"'b${planted}'" in assert_forbidden(resp)["detail"]
    assert tables_of(url, "b") == before
    # LanceDB's spelling of the member is the same target.
    resp = post(url, f"/v1/table/{table}/rename", headers,
                json={"new_table_name": planted, "new_namespace": ["b"]})
    assert_forbidden(resp)
    # The root namespace is outside `a` too.
    resp = post(url, f"/v1/table/{table}/rename", headers,
                json={"new_table_name": planted, "new_namespace_id": []})
    assert_forbidden(resp)
    assert tables_of(url, "b") == before and planted not in tables_of(url, "$")
    # Inside `a`, the same request is done.
    resp = post(url, f"/v1/table/{table}/rename", headers,
                json={"new_table_name": "moved" + credential[0], "new_namespace_id": ["a"]})
    assert resp.status_code == 200, resp.text
    assert "moved" + credential[0] in tables_of(url, "a")


# --------------------------------------------------- every member is declared
# A member whose name holds one of these words, and whose value can hold text, names
# (or may name) an identifier, namespace, location or database: it must be marked.
NAMING = re.compile(
    r"(?:^|_)(?:id|ids|ident|identifier|namespace|namespaces|table|tables|location|"
    r"locations|uri|url|path|paths|database|databases|db|dataset|source|target|from|to|"
    r"root|catalog|clone|bucket|rename|new)(?:_|$)"
)

# Members whose name has such a word but which name nothing, and why.
NOT_NAMES = {
    "when_not_matched_by_source_delete_filt": "an SQL condition on the merge's source rows",
}


def holds_text(hint: Any) -> bool:
    """Whether a member of type ``hint`` can hold a string (or a list or map of them)."""
    if typing.get_origin(hint) is Annotated:
        return holds_text(typing.get_args(hint)[0])
    if hint is Any or (isinstance(hint, type) and issubclass(hint, str)):
        return True
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return False  # its own members are scanned
    return any(holds_text(arg) for arg in typing.get_args(hint))


def every_member(model: type[msgspec.Struct], prefix: tuple[str, ...] = (),
                 seen: frozenset[type] = frozenset()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, type hint) of every member of ``model`` and of the Structs it holds."""
    hints = typing.get_type_hints(model, include_extras=True)
    for name in model.__struct_fields__:
        yield (*prefix, name), hints[name]
        stack = [hints[name]]
        while stack:
            hint = stack.pop()
            if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
                if hint not in seen:
                    yield from every_member(hint, (*prefix, name), seen | {model})
            else:
                stack.extend(typing.get_args(hint))


def undeclared(model: type[msgspec.Struct]) -> list[tuple[str, ...]]:
    """Members of ``model`` that look like they name something, with no marker."""
    declared = {m.path for m in names.members(model)}
    return sorted({path for path, hint in every_member(model)
                   if NAMING.search(path[-1]) and path[-1] not in NOT_NAMES
                   and holds_text(hint) and path not in declared})


def test_every_member_that_names_something_is_declared() -> None:
    models = {route.model for route in ROUTES}
    assert len(models) > 20
    missing = {m.__name__: undeclared(m) for m in models if undeclared(m)}
    assert not missing, (
        "Mark these members with a type of nsframe.server._http.names (Identifier, "
        "NamespaceId, TableName, Location, or InTable for a name inside the path's table) "
        f"so that scopes authorize what they name: {missing}"
    )


class _CloneRequest(Envelope, kw_only=True):
    """A made-up operation whose source is in a member nobody marked."""

    source_table: str | None = None
    source: list[str] | None = None
    target_rows: int | None = None
    shallow: bool = False


class _Nested(msgspec.Struct, kw_only=True):
    to_namespace: list[str]


class _BatchRequest(Envelope, kw_only=True):
    steps: list[_Nested] | None = None


class _Step(msgspec.Struct, kw_only=True):
    target: names.Identifier | None = None
    then: _Step | None = None


class _StepsRequest(Envelope, kw_only=True):
    steps: list[_Step] | None = None


def test_the_scan_finds_an_undeclared_member() -> None:
    assert undeclared(_CloneRequest) == [("source",), ("source_table",)]
    assert undeclared(_BatchRequest) == [("steps", "to_namespace")]
    assert undeclared(RenameTableRequest) == []


# ------------------------------------------------------- what a member reaches
def test_touched_names_of_a_rename_and_a_register() -> None:
    rename = msgspec.json.decode(
        b'{"new_table_name": "x", "new_namespace_id": ["b"]}', type=RenameTableRequest)
    touches = names.touched(rename, ["a", "t"], True, "$")
    assert [(t.ident, t.write) for t in touches] == [(["b", "x"], True)]
    same_ns = RenameTableRequest(new_table_name="x")
    assert [t.ident for t in names.touched(same_ns, ["a", "t"], True, "$")] == [["a", "x"]]
    register = RegisterTableRequest(location="elsewhere/d.lance")
    (touch,) = names.touched(register, ["a", "r"], True, "$")
    assert touch.ident == ["a", "r"] and touch.member == "location"
    assert names.touched(Envelope(), ["a", "t"], False, "$") == []

    class CloneRequest(Envelope, kw_only=True):
        # A source another operation only reads, on a route that writes.
        source: Annotated[list[str], names.Named("identifier", "read")] | None = None

    (touch,) = names.touched(CloneRequest(source=["b", "s"]), ["a", "t"], True, "$")
    assert touch.ident == ["b", "s"] and not touch.write and touch.member == "source"
    # Marked members inside Structs are found at any depth, in recursive ones too.
    deep = msgspec.convert({"steps": [{"target": ["a", "x"], "then": {"then": {
        "target": ["b", "y"]}}}]}, _StepsRequest)
    assert [(t.ident, t.member) for t in names.touched(deep, ["a", "t"], True, "$")] == [
        (["a", "x"], "steps.target"), (["b", "y"], "steps.then.then.target")]
    with pytest.raises(ValueError, match="unknown kind"):
        names.Named("table")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the walk
@dataclass(frozen=True)
class Case:
    """How the walk tests a member of one kind: the namespace the credential is limited
    to, a value naming something outside it and one inside it. Each is computed from the
    path's identifier and the walk's two locations (``{"a": ..., "b": ...}``: the folder
    of a table of each namespace)."""

    scope: Callable[[list[str]], list[str]]
    outside: Callable[[list[str], dict[str, str]], Any]
    inside: Callable[[list[str], dict[str, str]], Any]
    # False for a location: it is authorized as the path it is registered into, and
    # refused (not 403) when another table owns it (`_storage.registry`).
    forbidden: bool = True


def only_a(_: list[str]) -> list[str]:
    return ["a"]


CASES: dict[str, Case | None] = {
    "identifier": Case(only_a, lambda _, __: ["b", "t"], lambda path, _: path),
    "namespace": Case(only_a, lambda _, __: ["b"], lambda path, _: path[:-1]),
    # A table name stays in its namespace: outside only for a credential limited to
    # the path's own table.
    "table_name": Case(lambda path: path, lambda _, __: "other", lambda path, _: path[-1]),
    "location": Case(only_a, lambda _, where: where["b"], lambda _, where: where["a"],
                     forbidden=False),
    # Inside the path's own table: nothing beyond the path to authorize.
    "in_table": None,
}


def test_every_kind_has_a_walk_case() -> None:
    assert set(CASES) == set(typing.get_args(names.Kind))


def put(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        body = body.setdefault(name, {})
    body[path[-1]] = value


def reachable(route: ApiRoute, member: names.Member) -> bool:
    """Whether a client can send ``member`` to ``route`` at all."""
    return route.json_body or member.path[0] in route.model.QUERY


def walk_order(route: ApiRoute) -> tuple[bool, bool, str]:
    """Removals after the writes that need what they remove, the table's drop last."""
    removal = route.template.endswith(("/drop", "/delete"))
    return removal, route.template == "/v1/table/{id}/drop", route.template


def jwt_for(namespace: list[str]) -> dict[str, str]:
    return bearer(hs_token(nsframe_namespace=namespace))


def walk_call(route: ApiRoute, ns: str, txn: str, location: str
              ) -> tuple[str, str, dict[str, Any]]:
    """The method, path and `requests` arguments of the walk's valid request to ``route``."""
    method = "POST" if "POST" in (route.methods or ()) else "GET"
    path, kwargs = walk_request(method, route.template, ns, txn, location)
    return method, path, kwargs


def send(url: str, call: tuple[str, str, dict[str, Any]], route: ApiRoute,
         member: names.Member, value: Any, credential: dict[str, str]) -> requests.Response:
    """``call`` with ``member`` set to ``value``, in the body or the query string."""
    method, path, kwargs = call
    kwargs = dict(kwargs)
    if route.json_body:
        body = dict(kwargs.get("json") or {})
        put(body, member.path, value)
        kwargs["json"] = body
    else:
        kwargs["params"] = {**kwargs.get("params", {}), member.path[0]: value}
    headers = {**kwargs.pop("headers", {}), **credential}
    return requests.request(method, url + path, headers=headers, **kwargs)


def test_every_name_every_route_takes_is_authorized(scoped_server: RunningServer) -> None:
    url, admin, ns = scoped_server.url, key(FULL_KEY), "a$w"
    for made in (post(url, "/v1/namespace/a/create", admin, json={"mode": "exist_ok"}),
                 post(url, f"/v1/namespace/{ns}/create", admin, json={}),
                 post(url, f"/v1/namespace/{ns}$empty/create", admin, json={})):
        assert made.status_code == 200, made.text
    for table in ("t", "mv", "gone"):
        make_table(url, f"{ns}${table}")
    make_table(url, "b$t")
    where = {name: post(url, f"/v1/table/{table}/describe", admin, json={}).json()["location"]
             for name, table in (("a", f"{ns}$gone"), ("b", "b$t"))}
    location = where["a"]  # the walk deregisters the table, then registers it again
    built = post(url, f"/v1/table/{ns}$t/create_index", admin,
                 json={"column": "id", "index_type": "BTREE", "name": "idx"})
    assert built.status_code == 200, built.text
    txn = built.json()["transaction_id"]
    for action, body in (("tags/create", {"tag": "v1", "version": 1}),
                         ("branches/create", {"name": "keep"})):
        assert post(url, f"/v1/table/{ns}$t/{action}", admin, json=body).status_code == 200
    b_before, root_before = table_state(url, "b"), tables_of(url, "$")

    walked: dict[str, list[str]] = {}
    for route in sorted(ROUTES, key=walk_order):
        walked[route.template] = []
        for member in names.members(route.model):
            case = CASES[member.named.kind]
            if case is None or not reachable(route, member):
                continue
            walked[route.template].append(".".join(member.path))
            label = (route.template, member.path)
            call = walk_call(route, ns, txn, location)
            path_id = ns_ident(call[1]) or []
            credential = jwt_for(case.scope(path_id))
            before = tables_of(url, ns)
            resp = send(url, call, route, member, case.outside(path_id, where), credential)
            if case.forbidden or not route.namespaced:
                detail = assert_forbidden(resp)["detail"]
                assert not route.namespaced or ".".join(member.path) in detail, label
            else:
                assert 400 <= resp.status_code < 500, (label, resp.text)
            assert tables_of(url, ns) == before, label
            resp = send(url, walk_call(route, ns, txn, location), route, member,
                        case.inside(path_id, where), credential)
            if route.namespaced:
                assert resp.status_code != 403 and resp.status_code < 500, (label, resp.text)
            else:  # a transaction is within no namespace: a limited credential never sees one
                assert "not within a namespace" in assert_forbidden(resp)["detail"], label
    assert table_state(url, "b") == b_before and tables_of(url, "$") == root_before
    # Every route was walked; the ones without a JSON body take their members from the
    # query string, where no member names anything.
    assert set(walked) == {route.template for route in ROUTES}
    assert {"id", "new_table_name", "new_namespace_id", "new_namespace"} <= set(
        walked["/v1/table/{id}/rename"])
    assert {"id", "location"} <= set(walked["/v1/table/{id}/register"])
    assert {"id", "query.id"} <= set(walked["/v1/table/{id}/explain_plan"])
    assert not walked["/v1/table/{id}/insert"]
