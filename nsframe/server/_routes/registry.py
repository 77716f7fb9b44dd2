"""A table's name in the catalog: rename, register, deregister (`_storage.registry`), and
the table version records this server does not offer."""

from __future__ import annotations

from typing import Any

from nsframe._protocol.ids import join_id
from nsframe.exceptions import UnsupportedError
from nsframe.server._http.handler import Call
from nsframe.server._http.validation import Envelope
from nsframe.server._models.registry import (
    RegisterTableRequest,
    RenameTableRequest,
    TableVersionRecordRequest,
)
from nsframe.server._storage import registry
from nsframe.server._storage.names import check_name


def rename_table(call: Call[RenameTableRequest]) -> dict[str, Any]:
    args = call.args
    assert args.new_table_name is not None  # the model requires it
    namespace = args.namespace if args.namespace is not None else call.id[:-1]
    new_id = [*namespace, args.new_table_name]
    for part in new_id:
        check_name(part)
    ref = call.catalog.require_table(call.id, allow_declared=True)
    moved = registry.rename_table(call.catalog, ref, new_id)
    return {"id": moved.id, "table": join_id(moved.id, call.delimiter)}


def register_table(call: Call[RegisterTableRequest]) -> dict[str, Any]:
    args = call.args
    assert args.location is not None  # the model requires it
    catalog = call.catalog
    # The namespace first, as the reference answers: a 404 before the location's 400.
    catalog.require_namespace(call.id[:-1], for_child=True)
    key = registry.location_key(catalog, args.location)
    ref = registry.register_table(catalog, call.id, key, overwrite=args.mode == "Overwrite",
                                  properties=dict(args.properties or {}))
    # The location as the caller gave it, relative or not (describe gives the full URI):
    # Lance's clients compare the two.
    return {"location": args.location, "properties": catalog.table_properties(ref)}


def deregister_table(call: Call[Envelope]) -> dict[str, Any]:
    ref = call.catalog.require_table(call.id, allow_declared=True)
    properties = call.catalog.table_properties(ref)
    registry.deregister_table(call.catalog, ref)
    return {"id": call.id, "location": ref.uri, "properties": properties}


def table_version_records(call: Call[TableVersionRecordRequest]) -> dict[str, Any]:
    """CreateTableVersion and BatchDeleteTableVersions: not offered (docs/compatibility.md).

    They serve "managed versioning", where a client writes manifests and the namespace
    records them; here Lance commits its own manifests, and describe says
    ``managed_versioning: false``. Deleting version records would delete versions that
    tags and restores rely on.
    """
    raise UnsupportedError(
        "Table version records are not offered here: Lance commits each table's versions "
        "itself (describe answers managed_versioning false). Write through insert, "
        "merge_insert, update or delete; list versions with version/list.",
        status=404,
    )
