"""Namespace operations: create, list, describe, exists, drop."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from nsframe.exceptions import NamespaceNotFoundError
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import paginate, parse_limit
from nsframe.server._http.request import get_str_map, normalize_choice

CREATE_MODES = ("Create", "ExistOk", "Overwrite")
DROP_MODES = ("Fail", "Skip")
DROP_BEHAVIORS = ("Restrict", "Cascade")


def create_namespace(call: Call) -> dict[str, Any]:
    mode = normalize_choice(call.body.get("mode"), "mode", CREATE_MODES, "Create")
    properties = get_str_map(call.body, "properties")
    return {"properties": call.catalog.create_namespace(call.id, mode, properties)}


def list_namespaces(call: Call) -> dict[str, Any]:
    names = call.catalog.list_namespaces(call.id)
    page, token = paginate(
        names, call.params.get("page_token"), parse_limit(call.params.get("limit"))
    )
    return {"namespaces": page, "page_token": token}


def describe_namespace(call: Call) -> dict[str, Any]:
    return {"properties": call.catalog.namespace_properties(call.id)}


def namespace_exists(call: Call) -> Response:
    call.catalog.require_namespace(call.id)
    return Response(status_code=200)


def drop_namespace(call: Call) -> Response | dict[str, Any]:
    mode = normalize_choice(call.body.get("mode"), "mode", DROP_MODES, "Fail")
    behavior = normalize_choice(call.body.get("behavior"), "behavior", DROP_BEHAVIORS, "Restrict")
    if call.id and not call.catalog.namespace_exists(call.id):
        if mode == "Skip":
            return Response(status_code=204)
        # SEED_SPEC.md: a missing namespace with mode Fail is a 400, not a 404.
        raise NamespaceNotFoundError(
            f"Namespace {call.label!r} does not exist: nothing was dropped. Use mode Skip "
            "to ignore a missing namespace.",
            status=400,
        )
    return {"properties": call.catalog.drop_namespace(call.id, behavior)}
