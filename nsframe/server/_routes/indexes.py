"""Index operations: create (vector, scalar, FTS), list, stats and drop.

Builds run inside the request and are recorded in the transaction log (see
`_transactions`), so the `transaction_id` they return can be described afterwards.
Rows written after a build stay searchable: Lance scans the fragments an index does
not cover.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe.exceptions import IndexAlreadyExistsError, IndexNotFoundError, InvalidInputError
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import paginate
from nsframe.server._http.transactions import TransactionLog
from nsframe.server._models.indexes import (
    VECTOR_TYPES,
    CreateIndexRequest,
    CreateScalarIndexRequest,
    DropIndexRequest,
    IndexStatsRequest,
    ListIndexesRequest,
)
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_kind
from nsframe.server._storage.catalog import TableRef
from nsframe.server._storage.errors import lance_errors

# Request member -> Lance keyword, for vector index builds.
VECTOR_INT_PARAMS = {
    "num_partitions": "num_partitions",
    "num_sub_vectors": "num_sub_vectors",
    "num_bits": "num_bits",
    "sample_rate": "sample_rate",
    "max_iterations": "max_iters",
    "m": "m",
    "ef_construction": "ef_construction",
    "target_partition_size": "target_partition_size",
}
FTS_BOOL_PARAMS = ("with_position", "lower_case", "stem", "remove_stop_words", "ascii_folding")
Build = TypeVar("Build", bound=CreateIndexRequest)


def default_num_sub_vectors(dimension: int) -> int:
    """PQ sub-vectors for a ``dimension``-wide column when the request names none.

    As LanceDB chooses: 16 dimensions per sub-vector when they divide evenly, else 8, else
    the widest even split up to 16 dimensions (384 -> 24, 100 -> 10, 7 -> 1).
    """
    for width in (16, 8):
        if dimension % width == 0:
            return dimension // width
    width = max(w for w in range(1, 17) if dimension % w == 0)
    return dimension // width


def _vector_options(args: CreateIndexRequest, field: ResolvedField) -> dict[str, Any]:
    if vector_kind(field.field.type) is None:
        raise InvalidInputError(
            f"Column {field.path} is {field.field.type}: a vector index needs a fixed-size "
            "list column."
        )
    options: dict[str, Any] = {}
    for member, keyword in VECTOR_INT_PARAMS.items():
        value = getattr(args, member)
        if value is not None:
            options[keyword] = value
    if args.metric is not None:
        options["metric"] = args.metric
    assert args.index_type is not None  # checked by the model
    if "PQ" in args.index_type and "num_sub_vectors" not in options:
        # pylance requires it for PQ types; num_partitions it derives from the row count.
        options["num_sub_vectors"] = default_num_sub_vectors(_dimension(field))
    return options


def _dimension(field: ResolvedField) -> int:
    kind = field.field.type
    while pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type  # a multivector column: a list of fixed-size lists
    return int(kind.list_size)


def _fts_options(args: CreateIndexRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for member in FTS_BOOL_PARAMS:
        value = getattr(args, member)
        if value is not None:
            options[member] = value
    if args.base_tokenizer is not None:
        options["base_tokenizer"] = args.base_tokenizer
    if args.language:
        options["language"] = args.language
    if args.max_token_length is not None:
        options["max_token_length"] = args.max_token_length
    return options


def _build(call: Call[Build]) -> dict[str, Any]:
    args = call.args
    branch = args.branch or None
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    assert args.column is not None and args.index_type is not None  # checked by the model
    index_type = args.index_type
    name = args.name or None
    replace = args.replace
    # A dataset object of our own: the build mutates it, and cached ones are shared.
    ds = catalog.dataset(ref, branch=branch)
    field = resolve(ds.schema, args.column, "column")
    if index_type in VECTOR_TYPES:
        options = _vector_options(args, field)
    elif index_type == "INVERTED":
        options = _fts_options(args)
    else:
        options = {}
    before = {d.name for d in ds.describe_indices()}
    if replace is False:
        _check_name_free(call, before, name or f"{field.path}_idx")
    with TransactionLog.of(call.request).track(
        "CreateTableIndex", table=call.label, branch=normalize_branch(branch) or MAIN_BRANCH,
        column=field.path, index_type=index_type, name=name,
    ) as txn:
        with lance_errors(f"Building the {index_type} index on {field.path} failed"):
            if index_type in VECTOR_TYPES:
                ds.create_index(field.path, index_type, name=name,
                                replace=True if replace is None else replace, **options)
            else:
                ds.create_scalar_index(field.path, index_type,  # type: ignore[arg-type]
                                       name=name,
                                       replace=True if replace is None else replace, **options)
        catalog.remember(ref, branch, ds)
        created = _created_name(ds, before, name, field.path)
        txn.note(version=ds.version, index_name=created)
    return {"transaction_id": txn.id, "version": ds.version, "index_name": created}


def _check_name_free(call: Call[Build], existing: set[str], name: str) -> None:
    """409 before any build work: index ``name`` exists and the request may not replace it.

    Lance refuses this too, but only once the build has started, and its message speaks
    of Python's ``replace=True``. An unnamed index is named ``<column>_idx`` (as Lance
    names it), so a rebuild without a name is checked as well.
    """
    if name in existing:
        raise IndexAlreadyExistsError(
            f"Table {call.label!r} already has an index named {name!r}: choose another "
            "name, or send replace true to rebuild it."
        )


def _created_name(ds: LanceDataset, before: set[str], name: str | None, path: str) -> str:
    if name:
        return name
    descriptions = ds.describe_indices()
    new = [d.name for d in descriptions if d.name not in before]
    if new:
        return new[0]
    return next((d.name for d in descriptions if path in d.field_names), f"{path}_idx")


def create_index(call: Call[CreateIndexRequest]) -> dict[str, Any]:
    return _build(call)


def create_scalar_index(call: Call[CreateScalarIndexRequest]) -> dict[str, Any]:
    return _build(call)


# ------------------------------------------------------------------ reading
def _dataset(call: Call[ListIndexesRequest] | Call[IndexStatsRequest]
             ) -> tuple[TableRef, LanceDataset]:
    ref = call.catalog.require_table(call.id)
    args = call.args
    return ref, call.catalog.dataset(ref, branch=args.branch or None, version=args.version)


def list_indexes(call: Call[ListIndexesRequest]) -> dict[str, Any]:
    _, ds = _dataset(call)
    with lance_errors("Listing indexes failed"):
        descriptions = {d.name: d for d in ds.describe_indices()}
    names, next_token = paginate(list(descriptions), call.args.page_token, call.args.limit,
                                 listing="indexes")
    total_rows = ds.count_rows()
    indexes = []
    for name in names:
        d = descriptions[name]
        segment = d.segments[0] if d.segments else None
        indexes.append({
            "index_name": d.name,
            "index_uuid": str(segment.uuid) if segment is not None else "",
            "columns": list(d.field_names),
            "status": "Succeeded",
            "index_type": _friendly_type(d.index_type),
            "type_url": d.type_url,
            "num_indexed_rows": d.num_rows_indexed,
            "num_unindexed_rows": max(total_rows - d.num_rows_indexed, 0),
            "size_bytes": d.total_size_bytes,
            "num_segments": len(d.segments),
            "created_at": segment.created_at.isoformat()
            if segment is not None and segment.created_at else None,
            "index_version": segment.index_version if segment is not None else None,
            "index_details": json.dumps(d.details, sort_keys=True) if d.details else None,
        })
    return {"indexes": indexes, "page_token": next_token}


# Lance's names for scalar index types, spelled as the contract's index_type values.
_TYPE_NAMES = {"inverted": "FTS", "labellist": "LABEL_LIST", "btree": "BTREE"}


def _friendly_type(index_type: str) -> str:
    return _TYPE_NAMES.get(index_type.lower().replace("_", ""), index_type.upper())


def _stats(ds: LanceDataset, name: str) -> dict[str, Any]:
    try:
        stats: dict[str, Any] = ds.stats.index_stats(name)
    except KeyError as exc:
        raise IndexNotFoundError(
            f"The table has no index named {name!r}: list indexes to see their names."
        ) from exc
    return stats


def index_stats(call: Call[IndexStatsRequest]) -> dict[str, Any]:
    name = call.request.path_params["index_name"]
    _, ds = _dataset(call)
    with lance_errors(f"Reading statistics of index {name!r} failed"):
        stats = _stats(ds, name)
    first = (stats.get("indices") or [{}])[0]
    index_type = str(stats.get("index_type", ""))
    return {
        "index_type": _friendly_type(index_type),
        "distance_type": first.get("metric_type"),
        "num_indexed_rows": stats.get("num_indexed_rows"),
        "num_unindexed_rows": stats.get("num_unindexed_rows"),
        "num_indices": stats.get("num_indices"),
        "num_partitions": first.get("num_partitions"),
        "num_segments": stats.get("num_segments"),
        "num_indexed_fragments": stats.get("num_indexed_fragments"),
        "num_unindexed_fragments": stats.get("num_unindexed_fragments"),
    }


def drop_index(call: Call[DropIndexRequest]) -> dict[str, Any]:
    name = call.request.path_params["index_name"]
    branch = call.args.branch or None
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    ds = catalog.dataset(ref, branch=branch)
    if name not in {d.name for d in ds.describe_indices()}:
        raise IndexNotFoundError(
            f"Table {call.label!r} has no index named {name!r}: list indexes to see their names."
        )
    with TransactionLog.of(call.request).track(
        "DropTableIndex", table=call.label, index_name=name,
        branch=normalize_branch(branch) or MAIN_BRANCH,
    ) as txn:
        with lance_errors(f"Dropping index {name!r} failed"):
            ds.drop_index(name)
        txn.note(version=ds.version)
    catalog.remember(ref, branch, ds)
    return {"transaction_id": txn.id, "version": ds.version}
