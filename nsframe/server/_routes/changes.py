"""Changing a table in place: merge insert (upsert), update, add/alter/drop columns, schema
metadata. Each answers the version it committed (docs/compatibility.md has the shapes)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio.from_thread
import pyarrow as pa
from lance.dataset import LanceDataset
from starlette.responses import JSONResponse, Response

from nsframe._protocol.defaults import normalize_branch
from nsframe._protocol.schema_json import type_from_json
from nsframe.exceptions import BranchNotFoundError, InvalidInputError
from nsframe.server._http.arrow import arrow_body
from nsframe.server._http.handler import Call
from nsframe.server._http.request import column_names, read_body, whole_condition
from nsframe.server._models.changes import (
    AddColumnsRequest,
    AlterColumnsRequest,
    DropColumnsRequest,
    MergeInsertRequest,
    SchemaMetadataRequest,
    UpdateRequest,
)
from nsframe.server._search.fieldpath import ResolvedField, resolve
from nsframe.server._storage import changes
from nsframe.server._storage.catalog import TableRef
from nsframe.server._storage.writes import IncomingBatches, first_insert


# ---------------------------------------------------------------------------- rows
def merge_insert(call: Call[MergeInsertRequest]) -> dict[str, Any]:
    args = call.args
    ref = call.catalog.require_table(call.id, allow_declared=True)
    merge = changes.Merge(
        on=_keys(call),
        update_matched=args.when_matched_update_all,
        update_matched_if=_condition(args.when_matched_update_all_filt),
        insert_unmatched=args.when_not_matched_insert_all,
        delete_unmatched_target=args.when_not_matched_by_source_delete,
        delete_unmatched_target_if=_condition(args.when_not_matched_by_source_delete_filt),
    )
    if ref.state == "declared":
        return _merge_into_declared(call, ref, merge)
    with arrow_body(call.request) as stream:
        ds, stats = _merge(call, ref, args.branch, merge, stream)
    return {"version": ds.version, **stats}


def _merge(call: Call[MergeInsertRequest], ref: TableRef, branch: str | None,
           merge: changes.Merge, stream: IncomingBatches) -> tuple[LanceDataset, dict[str, int]]:
    with changes.changing(call.catalog, ref, branch, "The merge failed") as ds:
        merge = replace(merge, on=[_column(resolve(ds.schema, k, "on")) for k in merge.on])
        stats = changes.merge_insert(call.catalog, ref, branch, ds, merge, stream, call.label)
    return ds, stats


def _merge_into_declared(call: Call[MergeInsertRequest], ref: TableRef,
                         merge: changes.Merge) -> dict[str, Any]:
    """Upstream: a merge into a declared table creates it with the data. Of concurrent
    first merges one creates it, and the others merge into what it created."""
    if normalize_branch(call.args.branch) is not None:
        raise BranchNotFoundError(
            f"Table {call.label!r} is only declared, so it has no branch "
            f"{call.args.branch!r}: merge into the main branch first."
        )
    merged: dict[str, int] = {}

    def into_winner(winner: TableRef, rows: IncomingBatches) -> LanceDataset:
        ds, stats = _merge(call, winner, None, merge, rows)
        merged.update(stats)
        return ds

    with arrow_body(call.request) as stream:
        ds, rows = first_insert(call.catalog, ref, stream, label=call.label,
                                combine=into_winner)
    return {"version": ds.version, "num_inserted_rows": rows, "num_updated_rows": 0,
            "num_deleted_rows": 0, **merged}


def _column(found: ResolvedField) -> str:
    """What Lance's merge takes: a top-level column by its name, unquoted."""
    return found.segments[0] if len(found.segments) == 1 else found.path


def _keys(call: Call[MergeInsertRequest]) -> list[str]:
    """The ``on`` columns."""
    found = column_names(call.request, "on", call.args.on)
    if not found:
        raise InvalidInputError("The query parameter 'on' names no column: give ?on=id.")
    return found


def _condition(text: str | None) -> str | None:
    return whole_condition(text) if text and text.strip() else None


def update(call: Call[UpdateRequest]) -> dict[str, Any]:
    args = call.args
    ref = call.catalog.require_table(call.id)

    def rewrite(ds: LanceDataset) -> Any:
        values = {resolve(ds.schema, column, "updates").path: expression
                  for column, expression in args.updates or []}  # required
        predicate = _condition(args.predicate)
        return ds.update(values, where=predicate) if predicate else ds.update(values)

    ds, result = changes.rewrite_rows(call.catalog, ref, args.branch, "The update failed",
                                      rewrite)
    rows = int((result or {}).get("num_rows_updated") or 0)
    # `updated_rows` is upstream's name, `rows_updated` LanceDB's.
    return {"version": ds.version, "updated_rows": rows, "rows_updated": rows}


# ------------------------------------------------------------------------- columns
def add_columns(call: Call[AddColumnsRequest]) -> dict[str, Any]:
    entries = call.args.new_columns or []
    computed = {e.name: e.expression for e in entries if e.expression is not None}
    nulls = [pa.field(e.name, _data_type(e.data_type, f"new_columns[{i}]"))
             for i, e in enumerate(entries) if e.data_type is not None]
    ref = call.catalog.require_table(call.id)
    ds = changes.change_schema(call.catalog, ref, call.args.branch, "Adding the columns failed",
                               lambda ds: changes.add_columns(ds, computed, nulls))
    return {"version": ds.version}


def alter_columns(call: Call[AlterColumnsRequest]) -> dict[str, Any]:
    def alter(ds: LanceDataset) -> None:
        alterations: list[Any] = []  # Lance's AlterColumn dicts
        renames: list[tuple[list[str], str]] = []
        for i, entry in enumerate(call.args.alterations or []):
            field = resolve(ds.schema, entry.path, "path")
            change: dict[str, Any] = {"path": field.path}
            if entry.rename is not None:
                change["name"] = entry.rename
                renames.append((list(field.segments), entry.rename))
            if entry.nullable is not None:
                change["nullable"] = entry.nullable
            if entry.data_type is not None:
                change["data_type"] = _data_type(entry.data_type, f"alterations[{i}]")
            alterations.append(change)
        changes.check_renames(ds.schema, renames)
        ds.alter_columns(*alterations)

    ref = call.catalog.require_table(call.id)
    done = changes.change_schema(call.catalog, ref, call.args.branch,
                                 "Altering the columns failed", alter)
    return {"version": done.version}


def drop_columns(call: Call[DropColumnsRequest]) -> dict[str, Any]:
    def drop(ds: LanceDataset) -> None:
        ds.drop_columns([resolve(ds.schema, c, "columns").path for c in call.args.columns or []])

    ref = call.catalog.require_table(call.id)
    done = changes.change_schema(call.catalog, ref, call.args.branch,
                                 "Dropping the columns failed", drop)
    return {"version": done.version}


def _data_type(data: dict[str, Any], member: str) -> pa.DataType:
    try:
        return type_from_json(data)
    except (ValueError, KeyError) as exc:
        raise InvalidInputError(f"{member}.data_type is not a type this server reads: {exc}") \
            from None


def update_schema_metadata(call: Call[SchemaMetadataRequest]) -> Response:
    """UpdateTableSchemaMetadata: the body is a bare map of keys to new values (null
    removes a key); the answer is the table's schema metadata after the change."""
    raw = anyio.from_thread.run(read_body, call.request)
    try:
        values = json.loads(raw) if raw.strip() else None
    except ValueError:
        values = None
    if not isinstance(values, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in values.items()
    ):
        raise InvalidInputError(
            'The body must be a JSON object of metadata keys to string values (null '
            'removes a key), e.g. {"owner": "ana"}.'
        )
    ref = call.catalog.require_table(call.id)
    with changes.changing(call.catalog, ref, call.args.branch,
                          "Updating the schema metadata failed") as ds:
        ds.update_schema_metadata(values)
    metadata = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                for k, v in (ds.schema.metadata or {}).items()}
    return JSONResponse(metadata, headers={"x-nsframe-version": str(ds.version)})
