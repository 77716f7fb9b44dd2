"""Index operations: create (vector, scalar, FTS), list, stats and drop.

Builds run inside the request and are recorded in the transaction log (see
`_transactions`), so the `transaction_id` they return can be described afterwards.
Rows written after a build stay searchable: Lance scans the fragments an index does
not cover.
"""

from __future__ import annotations

import json
from typing import Any

from lance.dataset import LanceDataset

from nsframe.exceptions import IndexAlreadyExistsError, IndexNotFoundError, InvalidInputError
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import paginate, parse_limit
from nsframe.server._http.request import get_bool, get_int, get_str
from nsframe.server._http.transactions import TransactionLog
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_kind
from nsframe.server._search.vector import parse_distance_type
from nsframe.server._storage.catalog import MAIN_BRANCH, TableRef, normalize_branch
from nsframe.server._storage.errors import lance_errors

VECTOR_TYPES = (
    "IVF_PQ", "IVF_HNSW_SQ", "IVF_FLAT", "IVF_SQ", "IVF_HNSW_PQ", "IVF_HNSW_FLAT", "IVF_RQ",
)
SCALAR_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "FTS", "INVERTED", "NGRAM", "ZONEMAP",
                "BLOOMFILTER")
# Body member -> Lance keyword, for vector index builds.
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
FTS_TOKENIZERS = ("simple", "whitespace", "raw", "ngram", "icu", "icu/split")


def _branch(call: Call) -> str | None:
    """The branch from ``?branch=`` or the body; both given and different is a 400."""
    in_query = call.params.get("branch") or None
    in_body = get_str(call.body, "branch") or None
    if in_query and in_body and normalize_branch(in_query) != normalize_branch(in_body):
        raise InvalidInputError(
            f"The branch is {in_query!r} in the query string but {in_body!r} in the body: "
            "send one."
        )
    return in_query or in_body


def _index_type(raw: str | None, scalar_only: bool) -> str:
    if raw is None or not raw.strip():
        raise InvalidInputError(
            "The member 'index_type' is required: one of " + ", ".join(VECTOR_TYPES + SCALAR_TYPES)
            + "."
        )
    wanted = raw.strip().upper()
    if wanted in SCALAR_TYPES:
        return "INVERTED" if wanted == "FTS" else wanted
    if wanted in VECTOR_TYPES:
        if scalar_only:
            raise InvalidInputError(
                f"{wanted} is a vector index: build it with create_index, not "
                "create_scalar_index."
            )
        return wanted
    raise InvalidInputError(
        f"The index_type {raw!r} is not known: use one of "
        + ", ".join(SCALAR_TYPES if scalar_only else VECTOR_TYPES + SCALAR_TYPES) + "."
    )


def _vector_options(body: dict[str, Any], field: ResolvedField) -> dict[str, Any]:
    if vector_kind(field.field.type) is None:
        raise InvalidInputError(
            f"Column {field.path} is {field.field.type}: a vector index needs a fixed-size "
            "list column."
        )
    options: dict[str, Any] = {}
    for member, keyword in VECTOR_INT_PARAMS.items():
        value = get_int(body, member, minimum=1)
        if value is not None:
            options[keyword] = value
    metric = parse_distance_type(body.get("distance_type") or body.get("metric_type"),
                                 "distance_type")
    if metric is not None:
        options["metric"] = metric
    return options


def _fts_options(body: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for member in FTS_BOOL_PARAMS:
        value = get_bool(body, member)
        if value is not None:
            options[member] = value
    tokenizer = get_str(body, "base_tokenizer")
    if tokenizer is not None:
        if tokenizer.lower() not in FTS_TOKENIZERS:
            raise InvalidInputError(
                f"The base_tokenizer {tokenizer!r} is not known: use one of "
                + ", ".join(FTS_TOKENIZERS) + "."
            )
        options["base_tokenizer"] = tokenizer.lower()
    language = get_str(body, "language")
    if language:
        options["language"] = language
    max_len = get_int(body, "max_token_length", minimum=1)
    if max_len is not None:
        options["max_token_length"] = max_len
    return options


def _build(call: Call, *, scalar_only: bool) -> dict[str, Any]:
    body = call.body
    branch = _branch(call)
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    column = get_str(body, "column")
    if not column:
        raise InvalidInputError("The member 'column' is required: the field path to index.")
    index_type = _index_type(get_str(body, "index_type"), scalar_only)
    name = get_str(body, "name") or None
    replace = get_bool(body, "replace")
    # A dataset object of our own: the build mutates it, and cached ones are shared.
    ds = catalog.dataset(ref, branch=branch)
    field = resolve(ds.schema, column, "column")
    if index_type in VECTOR_TYPES:
        options = _vector_options(body, field)
    elif index_type == "INVERTED":
        options = _fts_options(body)
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


def _check_name_free(call: Call, existing: set[str], name: str) -> None:
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


def create_index(call: Call) -> dict[str, Any]:
    return _build(call, scalar_only=False)


def create_scalar_index(call: Call) -> dict[str, Any]:
    return _build(call, scalar_only=True)


# ------------------------------------------------------------------ reading
def _dataset(call: Call) -> tuple[TableRef, LanceDataset]:
    source: dict[str, Any] = call.body
    ref = call.catalog.require_table(call.id)
    version = get_int(source, "version")
    if version is None and call.params.get("version"):
        version = get_int({"version": _int_param(call.params.get("version"))}, "version")
    return ref, call.catalog.dataset(ref, branch=_branch(call), version=version)


def _int_param(raw: str | None) -> int | str | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return raw


def list_indexes(call: Call) -> dict[str, Any]:
    _, ds = _dataset(call)
    with lance_errors("Listing indexes failed"):
        descriptions = {d.name: d for d in ds.describe_indices()}
    limit = call.body.get("limit", call.params.get("limit"))
    token = get_str(call.body, "page_token") or call.params.get("page_token")
    names, next_token = paginate(list(descriptions), token, parse_limit(limit))
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


def index_stats(call: Call) -> dict[str, Any]:
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


def drop_index(call: Call) -> dict[str, Any]:
    name = call.request.path_params["index_name"]
    branch = _branch(call)
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
