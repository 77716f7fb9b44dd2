"""Table operations: create, declare, list, describe, exists, drop, count, stats, insert,
delete."""

from __future__ import annotations

import json
from typing import Any

import lance
from lance.dataset import LanceDataset
from starlette.responses import Response

from nsframe import _spec
from nsframe.exceptions import (
    BranchNotFoundError,
    InvalidInputError,
    TableAlreadyExistsError,
)
from nsframe.server._arrow import (
    BodyFile,
    StreamReader,
    check_insert_schema,
    schema_to_base64,
    schema_to_json,
)
from nsframe.server._catalog import Catalog, TableRef, normalize_branch
from nsframe.server._errors import lance_errors
from nsframe.server._handler import Call, route
from nsframe.server._ids import format_id
from nsframe.server._optimize import DEFAULT_TARGET_ROWS
from nsframe.server._pagination import paginate, parse_limit
from nsframe.server._request import (
    get_int,
    get_str,
    normalize_choice,
    query_bool,
    query_int,
    whole_condition,
)

CREATE_MODES = ("Create", "ExistOk", "Overwrite")
INSERT_MODES = ("Append", "Overwrite")


# ----------------------------------------------------------------------- writing
def write_stream(call: Call, ref: TableRef, *, mode: str,
                 branch: str | None = None) -> tuple[LanceDataset, int]:
    """Stream the request's Arrow body into ``ref``; returns the new dataset and row count.

    ``mode`` is Lance's: "create", "append" or "overwrite". Nothing is committed unless
    the whole stream was read and written.
    """
    limit = getattr(call.request.app.state, "max_arrow_bytes", None)
    body = BodyFile(call.request.stream().__aiter__(), limit=limit)
    try:
        return _write_body(call, ref, body, mode=mode, branch=branch)
    finally:
        body.close()


def _write_body(call: Call, ref: TableRef, body: BodyFile, *, mode: str,
                branch: str | None) -> tuple[LanceDataset, int]:
    catalog = call.catalog
    stream = StreamReader(body)
    existing: LanceDataset | None = None
    if mode != "create":
        existing = catalog.dataset(ref, branch=branch)
    if mode == "append" and existing is not None:
        check_insert_schema(stream.schema, existing.schema, ref.label(call.delimiter))
        if stream.is_empty():
            return existing, 0
    target: str | LanceDataset = ref.uri
    if normalize_branch(branch) is not None and existing is not None:
        target = existing
    with lance_errors(f"Writing to table {ref.label(call.delimiter)!r} failed"):
        try:
            if mode == "create":
                ds = _create_exclusive(catalog, ref, stream, call.label)
            else:
                ds = lance.write_dataset(stream.reader(), target, mode=mode,
                                         session=catalog.session)
        except Exception:
            if stream.error is not None:
                raise stream.error from None
            raise
    # A declared table's properties file stays: it now holds the created table's properties.
    catalog.remember(ref, branch, ds)
    return ds, stream.num_rows


def _create_exclusive(catalog: Catalog, ref: TableRef, stream: StreamReader,
                      label: str) -> LanceDataset:
    with catalog.creation_lock(ref):
        if catalog.table_state(ref) == "created":
            raise TableAlreadyExistsError(
                f"Table {label!r} was created by another request at the same time: insert "
                "into it, or create with mode exist_ok or overwrite."
            )
        return lance.write_dataset(stream.reader(), ref.uri, mode="create",
                                   session=catalog.session)


def create_table(call: Call) -> dict[str, Any]:
    mode = normalize_choice(call.params.get("mode"), "mode", CREATE_MODES, "Create")
    properties = _properties_param(call)
    catalog = call.catalog
    catalog.require_namespace(call.id[:-1])
    ref = catalog.table_ref(call.id)
    with catalog.creation_lock(ref):
        state = catalog.table_state(ref)
        if state == "created" and mode == "Create":
            raise TableAlreadyExistsError(
                f"Table {call.label!r} already exists: use mode exist_ok to open it or "
                "overwrite to replace it."
            )
        if state == "created" and mode == "ExistOk":
            ds = catalog.dataset(ref)
            return {"version": ds.version, "properties": catalog.table_properties(ref)}
        ds, rows = write_stream(call, ref, mode="overwrite" if state == "created" else "create")
        # Properties are saved only once the data is committed: a failed create leaves
        # no declared table behind.
        if properties:
            catalog.declare_table(ref, properties)
    return {"version": ds.version, "num_inserted_rows": rows,
            "properties": catalog.table_properties(ref)}


def _properties_param(call: Call) -> dict[str, str] | None:
    raw = call.params.get("properties")
    if not raw:
        return None
    try:
        props = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"The properties parameter is not JSON: {exc}.") from exc
    if not isinstance(props, dict) or not all(isinstance(v, str) for v in props.values()):
        raise InvalidInputError("The properties parameter must be a JSON object of strings.")
    return props


def declare_table(call: Call) -> dict[str, Any]:
    catalog = call.catalog
    catalog.require_namespace(call.id[:-1])
    ref = catalog.table_ref(call.id)
    if catalog.table_state(ref) != "missing":
        raise TableAlreadyExistsError(f"Table {call.label!r} already exists.")
    properties = call.body.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise InvalidInputError("The member 'properties' must be a JSON object of strings.")
    with catalog.ddl_lock:
        catalog.declare_table(ref, {str(k): str(v) for k, v in (properties or {}).items()})
    return {"properties": catalog.table_properties(ref)}


def insert(call: Call) -> dict[str, Any]:
    mode = normalize_choice(call.params.get("mode"), "mode", INSERT_MODES, "Append")
    branch = call.params.get("branch")
    ref = call.catalog.require_table(call.id, allow_declared=True)
    if call.catalog.table_state(ref) == "declared":
        if normalize_branch(branch) is not None:
            raise BranchNotFoundError(
                f"Table {call.label!r} is only declared, so it has no branch {branch!r}: "
                "insert into the main branch first."
            )
        # SEED_SPEC.md: an insert into a declared table creates it with the data. Under
        # the creation lock, so that of two concurrent first inserts the second appends.
        with call.catalog.creation_lock(ref):
            if call.catalog.table_state(ref) == "declared":
                ds, rows = write_stream(call, ref, mode="create")
                return {"version": ds.version, "num_inserted_rows": rows}
    ds, rows = write_stream(call, ref, mode=mode.lower(), branch=branch)
    return {"version": ds.version, "num_inserted_rows": rows}


# ----------------------------------------------------------------------- reading
def list_tables(call: Call) -> dict[str, Any]:
    include_declared = query_bool(call.params, "include_declared", True)
    names = call.catalog.list_tables(call.id, include_declared=include_declared)
    page, token = paginate(
        names, call.params.get("page_token"), parse_limit(call.params.get("limit"))
    )
    return {"tables": page, "page_token": token}


def list_all_tables(call: Call) -> dict[str, Any]:
    names = [format_id(parts, call.delimiter) for parts in call.catalog.walk_tables([])]
    page, token = paginate(
        names, call.params.get("page_token"), parse_limit(call.params.get("limit"))
    )
    return {"tables": page, "page_token": token}


def describe_table(call: Call) -> dict[str, Any]:
    catalog = call.catalog
    ref = catalog.require_table(call.id, allow_declared=True)
    base = {"table": ref.name, "namespace": call.id[:-1],
            "properties": catalog.table_properties(ref)}
    if catalog.table_state(ref) == "declared":
        return {**base, "is_only_declared": True, "schema": None, "version": None}
    version = get_int(call.body, "version")
    branch = get_str(call.body, "branch")
    ds = catalog.dataset(ref, branch=branch, version=version)
    return {**base, **describe_dataset(ds), "is_only_declared": False}


def describe_dataset(ds: LanceDataset) -> dict[str, Any]:
    """Version, schema and row statistics, from the manifest already in memory."""
    summary, num_rows = version_summary(ds)
    return {
        "version": ds.version,
        "schema": schema_to_json(ds.schema),
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


def table_exists(call: Call) -> Response:
    call.catalog.require_table(call.id, allow_declared=True)
    return Response(status_code=200)


def drop_table(call: Call) -> dict[str, Any]:
    ref = call.catalog.require_table(call.id, allow_declared=True)
    call.catalog.drop_table(ref)
    return {"id": call.id}


def count_rows(call: Call) -> Response:
    source: Any = call.body
    if call.request.method == "GET":
        source = {
            "predicate": call.params.get("predicate") or call.params.get("filter"),
            "version": query_int(call.params, "version"),
            "branch": call.params.get("branch"),
        }
    predicate = get_str(source, "predicate") or get_str(source, "filter")
    ds = call.catalog.dataset(
        call.catalog.require_table(call.id),
        branch=get_str(source, "branch"),
        version=get_int(source, "version"),
    )
    with lance_errors(f"The predicate {predicate!r} is not valid"):
        n = ds.count_rows(filter=whole_condition(predicate)) if predicate else ds.count_rows()
    return Response(json.dumps(n), media_type=_spec.JSON)


def table_stats(call: Call) -> dict[str, Any]:
    """`GetTableStats`, LanceDB's `Table.stats()`: size, rows, indexes and fragment layout
    of the latest version of a branch.

    Computed as LanceDB computes it: fragment ``lengths`` are physical rows (deleted rows
    count until compaction removes them), percentiles are nearest-rank (the value at index
    ``n * p // 100`` of the sorted lengths), the mean is rounded down. A fragment is small
    when `optimize` would compact it for its size: fewer rows than its default target.
    ``total_bytes`` is the size of the version's data files, from the manifest.
    """
    source: Any = call.body
    if call.request.method == "GET":
        source = {"branch": call.params.get("branch")}
    ds = call.catalog.dataset(call.catalog.require_table(call.id),
                              branch=get_str(source, "branch"))
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
def delete(call: Call) -> dict[str, Any]:
    predicate = get_str(call.body, "predicate", min_length=1)
    if predicate is None or not predicate.strip():
        raise InvalidInputError(
            "The member 'predicate' is required: give a SQL condition such as \"id = 3\". "
            "To delete every row, send \"true\"."
        )
    branch = get_str(call.body, "branch")
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    # A dataset object of its own: the cached ones are shared by concurrent readers.
    ds = catalog.open_fresh(ref, branch)
    with lance_errors(f"The predicate {predicate!r} is not valid"):
        result = ds.delete(whole_condition(predicate))
    catalog.remember(ref, branch, ds)
    deleted = result.get("num_deleted_rows") if isinstance(result, dict) else None
    return {"version": ds.version, "num_deleted_rows": deleted}


routes = [
    route(_spec.TABLE_CREATE, create_table, json_body=False),
    route(_spec.TABLE_DECLARE, declare_table),
    route(_spec.TABLE_LIST_ALL, list_all_tables, ("GET",), json_body=False, has_id=False),
    route(_spec.NAMESPACE_TABLE_LIST, list_tables, ("GET", "POST"), json_body=False),
    route(_spec.TABLE_DESCRIBE, describe_table),
    route(_spec.TABLE_EXISTS, table_exists),
    route(_spec.TABLE_DROP, drop_table),
    route(_spec.TABLE_COUNT_ROWS, count_rows, ("GET", "POST")),
    route(_spec.TABLE_STATS, table_stats, ("GET", "POST")),
    route(_spec.TABLE_INSERT, insert, json_body=False),
    route(_spec.TABLE_DELETE, delete),
]
