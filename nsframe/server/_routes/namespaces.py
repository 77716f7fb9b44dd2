"""Namespace operations: create, list, describe, exists, drop."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from nsframe.exceptions import NamespaceNotFoundError
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import PageRequest, paginate
from nsframe.server._http.validation import Envelope
from nsframe.server._models.namespaces import CreateNamespaceRequest, DropNamespaceRequest


def create_namespace(call: Call[CreateNamespaceRequest]) -> dict[str, Any]:
    args = call.args
    return {"properties": call.catalog.create_namespace(call.id, args.mode, args.properties)}


def list_namespaces(call: Call[PageRequest]) -> dict[str, Any]:
    names = call.catalog.list_namespaces(call.id)
    page, token = paginate(names, call.args.page_token, call.args.limit,
                           listing="namespaces", names_as_tokens=True)
    return {"namespaces": page, "page_token": token}


def describe_namespace(call: Call[Envelope]) -> dict[str, Any]:
    return {"properties": call.catalog.namespace_properties(call.id)}


def namespace_exists(call: Call[Envelope]) -> Response:
    call.catalog.require_namespace(call.id)
    return Response(status_code=200)


def drop_namespace(call: Call[DropNamespaceRequest]) -> Response | dict[str, Any]:
    mode, behavior = call.args.mode, call.args.behavior
    if call.id and not call.catalog.namespace_exists(call.id):
        if mode == "Skip":
            return Response(status_code=204)
        # spec/SEED_SPEC.md: a missing namespace with mode Fail is a 400, not a 404.
        raise NamespaceNotFoundError(
            f"Namespace {call.label!r} does not exist: nothing was dropped. Use mode Skip "
            "to ignore a missing namespace.",
            status=400,
        )
    return {"properties": call.catalog.drop_namespace(call.id, behavior)}
