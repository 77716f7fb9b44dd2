"""Table operations: create, declare, list, describe, exists, drop, count, stats, insert,
delete."""

from __future__ import annotations

import json
from typing import Any

from lance.dataset import LanceDataset
from starlette.responses import Response

from nsframe._protocol import routes
from nsframe._protocol.defaults import normalize_branch
from nsframe._protocol.ids import join_id
from nsframe._protocol.schema_json import (
    schema_to_base64,
    schema_to_json,
    schema_to_lance_json,
)
from nsframe.exceptions import BranchNotFoundError, TableAlreadyExistsError
from nsframe.server._http import dialect
from nsframe.server._http.arrow import arrow_body
from nsframe.server._http.capacity import Work
from nsframe.server._http.fields import shown
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import PageRequest, paginate
from nsframe.server._http.request import column_names, whole_condition
from nsframe.server._http.validation import Envelope
from nsframe.server._models.tables import (
    CountRowsRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeleteRequest,
    DescribeTableRequest,
    InsertRequest,
    ListTablesRequest,
    TableStatsRequest,
)
from nsframe.server._storage import changes
from nsframe.server._storage.errors import lance_errors
from nsframe.server._storage.writes import (
    DEFAULT_TARGET_ROWS,
    first_insert,
    write_batches,
)
from nsframe.server._storage.writes import (
    create_table as create_new_table,
)


# ----------------------------------------------------------------------- writing
def create_table(call: Call[CreateTableRequest]) -> dict[str, Any]:
    mode, properties = call.args.mode, call.args.properties
    key = column_names(call.request, "primary_key", call.args.primary_key) or None
    catalog = call.catalog
    catalog.table_folder(call.id, for_child=True)  # 404 before reading the body
    checked, current = catalog.lookup_table(call.id)
    if current is not None and current.state == "created":
        if mode == "Create":
            raise TableAlreadyExistsError(
                f"Table {call.label!r} already exists: use mode exist_ok to open it or "
                "overwrite to replace it.",
                # LanceDB's client knows an existing table only by a 400 saying so.
                status=400 if dialect.is_lancedb(call.request) else None,
            )
        if mode == "ExistOk":
            ds = catalog.dataset(current)
            return {"version": ds.version, "location": current.uri,
                    "properties": catalog.table_properties(current)}
        with arrow_body(call.request) as stream:
            ds, rows = write_batches(catalog, current, stream, mode="overwrite",
                                     label=call.label, primary_key=key)
        if properties is not None:
            catalog.set_table_properties(current, properties)
        return {"version": ds.version, "num_inserted_rows": rows, "location": current.uri,
                "properties": catalog.table_properties(catalog.require_table(call.id))}
    # A declared table keeps its properties unless the create names new ones.
    if properties is None:
        properties = catalog.table_properties(current) if current is not None else {}
    with arrow_body(call.request) as stream:
        ds, rows = create_new_table(catalog, call.id, stream, label=call.label,
                                    previous=checked, properties=properties, primary_key=key)
    return {"version": ds.version, "num_inserted_rows": rows,
            "location": catalog.require_table(call.id).uri, "properties": properties}


def declare_table(call: Call[DeclareTableRequest]) -> dict[str, Any]:
    properties = call.args.properties
    ref = call.catalog.declare_table(
        call.id, {str(k): str(v) for k, v in (properties or {}).items()})
    # Where the table's data will be: a client may write the dataset there itself, and
    # the table is created once it has (`Catalog._settled`).
    return {"location": ref.uri, "properties": call.catalog.table_properties(ref),
            "managed_versioning": False}


def insert(call: Call[InsertRequest]) -> dict[str, Any]:
    mode, branch = call.args.mode, call.args.branch
    ref = call.catalog.require_table(call.id, allow_declared=True)
    if ref.state == "declared":
        if normalize_branch(branch) is not None:
            raise BranchNotFoundError(
                f"Table {call.label!r} is only declared, so it has no branch {branch!r}: "
                "insert into the main branch first."
            )
        with arrow_body(call.request) as stream:
            ds, rows = first_insert(call.catalog, ref, stream, label=call.label)
        return {"version": ds.version, "num_inserted_rows": rows}
    with arrow_body(call.request) as stream:
        ds, rows = write_batches(call.catalog, ref, stream, mode=mode.lower(),
                                 label=call.label, branch=branch)
    return {"version": ds.version, "num_inserted_rows": rows}


# ----------------------------------------------------------------------- reading
def list_tables(call: Call[ListTablesRequest]) -> dict[str, Any]:
    args = call.args
    names = call.catalog.list_tables(call.id, include_declared=args.include_declared)
    page, token = paginate(names, args.page_token, args.limit, listing="tables",
                           names_as_tokens=True)
    return {"tables": page, "page_token": token}


def list_all_tables(call: Call[PageRequest]) -> dict[str, Any]:
    if dialect.is_lancedb(call.request):
        # LanceDB's `table_names()`: the root namespace's tables, which it opens by name;
        # its page_token is the name to start after (`start_after`), not a token of ours.
        names = call.catalog.list_tables([])
        after = call.args.page_token
        limit = call.args.limit or len(names)
        page = [n for n in names if not after or n > after][:limit]
        return {"tables": page, "page_token": None}
    names = [join_id(parts, call.delimiter) for parts in call.catalog.walk_tables([])]
    page, token = paginate(names, call.args.page_token, call.args.limit,
                           listing="all-tables", names_as_tokens=True)
    return {"tables": page, "page_token": token}


def describe_table(call: Call[DescribeTableRequest]) -> dict[str, Any]:
    catalog = call.catalog
    ref = catalog.require_table(call.id, allow_declared=True)
    base = {"table": ref.name, "namespace": call.id[:-1],
            "properties": catalog.table_properties(ref)}
    if ref.state == "declared":
        return {**base, "is_only_declared": True, "schema": None, "version": None,
                **({"location": ref.uri, "table_uri": ref.uri} if ref.uri else {})}
    ds = catalog.dataset(ref, branch=call.args.branch, version=call.args.version)
    described = describe_dataset(ds, lance_spelling=dialect.is_lancedb(call.request))
    vended = {} if catalog.vended_options is None else {"storage_options": catalog.vended_options}
    return {**base, **described, "location": ref.uri, "table_uri": ref.uri, **vended,
            "is_only_declared": False}


def describe_dataset(ds: LanceDataset, *, lance_spelling: bool = False) -> dict[str, Any]:
    """Version, schema and row statistics, from the manifest already in memory."""
    summary, num_rows = version_summary(ds)
    return {
        "version": ds.version,
        "schema": schema_to_lance_json(ds.schema) if lance_spelling else schema_to_json(ds.schema),
        "arrow_schema": schema_to_base64(ds.schema),
        "stats": {
            "num_rows": num_rows,
            "num_deleted_rows": int(summary.get("total_deletion_file_rows", 0)),
            "num_fragments": int(summary.get("total_fragments", 0)),
        },
        "metadata": {str(k): str(v) for k, v in summary.items()},
    }


def version_summary(ds: LanceDataset) -> tuple[dict[str, Any], int]:
    """The manifest's summary of this version (``total_rows``, ``total_files_size``, ...)
    and its number of rows: the summary's, counted only when the summary lacks it."""
    summary: dict[str, Any] = ds.get_version().get("metadata") or {}
    num_rows = int(summary["total_rows"]) if "total_rows" in summary else ds.count_rows()
    return summary, num_rows


def table_exists(call: Call[Envelope]) -> Response:
    call.catalog.require_table(call.id, allow_declared=True)
    return Response(status_code=200)


def drop_table(call: Call[Envelope]) -> dict[str, Any]:
    ref = call.catalog.require_table(call.id, allow_declared=True)
    call.catalog.drop_table(ref)
    return {"id": call.id}


def count_rows(call: Call[CountRowsRequest]) -> Response:
    args = call.args
    predicate = args.condition
    ds = call.catalog.dataset(call.catalog.require_table(call.id), branch=args.branch,
                              version=args.version)
    with lance_errors(f"The predicate {shown(predicate)} is not valid",
                      lambda: ds.schema.names):
        n = _count_matching(ds, whole_condition(predicate), call.work) if predicate \
            else ds.count_rows()
    return Response(json.dumps(n), media_type=routes.JSON)


# Rows counted per Lance call: between two calls the request's deadline and its client
# are checked, since one Lance call cannot be interrupted. A group re-parses the filter,
# so groups are large.
COUNT_GROUP_ROWS = 4_000_000


def _count_matching(ds: LanceDataset, condition: str, work: Work) -> int:
    """Rows matching ``condition``, counted a group of fragments at a time."""
    fragments = ds.get_fragments()
    if not fragments:
        return ds.count_rows(filter=condition)  # still parses it: a bad filter is a 400
    total = 0
    group: list[Any] = []
    rows = 0
    for fragment in fragments:
        group.append(fragment)
        rows += fragment.physical_rows
        if rows >= COUNT_GROUP_ROWS or fragment is fragments[-1]:
            work.check()
            total += ds.scanner(filter=condition, fragments=group, columns=[],
                                with_row_id=True).count_rows()
            group, rows = [], 0
    return total


def table_stats(call: Call[TableStatsRequest]) -> dict[str, Any]:
    """`GetTableStats`, LanceDB's `Table.stats()`: size, rows, indexes and fragment layout
    of the latest version of a branch.

    Computed as LanceDB computes it: fragment ``lengths`` are physical rows (deleted rows
    count until compaction removes them), percentiles are nearest-rank (the value at index
    ``n * p // 100`` of the sorted lengths), the mean is rounded down. A fragment is small
    when `optimize` would compact it for its size: fewer rows than its default target.
    ``total_bytes`` is the size of the version's data files, from the manifest.
    """
    ds = call.catalog.dataset(call.catalog.require_table(call.id), branch=call.args.branch)
    with lance_errors(f"Reading the statistics of table {call.label!r} failed"):
        fragments = ds.get_fragments()
        lengths = sorted(f.physical_rows for f in fragments)
        num_indices = len(ds.describe_indices())
        # The manifest's summary; computed from the fragments where it lacks a member.
        summary, num_rows = version_summary(ds)
        total_bytes = int(summary["total_files_size"]) if "total_files_size" in summary \
            else sum(d.file_size_bytes or 0 for f in fragments for d in f.metadata.files)
    # A table without fragments reports zeros, as one empty fragment would.
    spread = lengths or [0]
    n = len(spread)
    return {
        "total_bytes": total_bytes,
        "num_rows": num_rows,
        "num_indices": num_indices,
        "fragment_stats": {
            "num_fragments": len(lengths),
            "num_small_fragments": sum(1 for rows in lengths if rows < DEFAULT_TARGET_ROWS),
            "lengths": {
                "min": spread[0],
                "max": spread[-1],
                "mean": sum(spread) // n,
                **{f"p{p}": spread[n * p // 100] for p in (25, 50, 75, 99)},
            },
        },
    }


# ---------------------------------------------------------------------- deleting
def delete(call: Call[DeleteRequest]) -> dict[str, Any]:
    predicate, branch = call.args.predicate, call.args.branch
    assert predicate is not None  # DeleteRequest requires it
    ref = call.catalog.require_table(call.id)

    def rewrite(ds: LanceDataset) -> Any:
        with lance_errors(f"The predicate {shown(predicate)} is not valid", ds.schema.names):
            return ds.delete(whole_condition(predicate))

    ds, result = changes.rewrite_rows(call.catalog, ref, branch, "The delete failed", rewrite)
    deleted = result.get("num_deleted_rows") if isinstance(result, dict) else None
    return {"version": ds.version, "num_deleted_rows": deleted}
