"""`POST /v1/table/{id}/query`: vector, full-text, hybrid and filter-only queries.

The body is checked whole before Lance runs anything; the table comes from the
catalog's cache of opened datasets (see `_catalog`), so a query never re-opens it.
docs/query.md describes every member, the defaults and the hybrid fusion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.dataset import LanceDataset
from starlette.responses import Response

from nsframe.exceptions import InvalidInputError, SchemaMismatchError
from nsframe.server._http.handler import Call
from nsframe.server._http.request import get_bool, get_dict, get_int, get_str, whole_condition
from nsframe.server._http.results import arrow_file_response, table_response
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_kind
from nsframe.server._search.fts import TextQuery, TextQueryBuilder, parse_text_query
from nsframe.server._search.vector import (
    VectorQuery,
    nearest_options,
    parse_vector_query,
    vector_column,
)
from nsframe.server._storage.errors import lance_errors

DEFAULT_SEARCH_K = 10
# Reciprocal rank fusion constant, as in the RRF paper and LanceDB.
RRF_K = 60
RELEVANCE = "_relevance_score"
# A field path (plain or backtick-quoted segments); any other alias value is SQL.
_SEGMENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_PATH = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})*")
_SQL_LITERALS = {"true", "false", "null"}

Columns = list[str] | dict[str, str] | None


@dataclass
class QueryRequest:
    k: int | None
    offset: int
    filter: str | None
    prefilter: bool
    names: list[str] | None
    aliases: dict[str, str] | None
    with_row_id: bool
    fast_search: bool | None
    version: int | None
    branch: str | None
    vector: VectorQuery | None
    text: TextQuery | None

    @property
    def search_k(self) -> int:
        return self.k or DEFAULT_SEARCH_K


def parse_request(body: dict[str, Any]) -> QueryRequest:
    names, aliases = _parse_columns(body.get("columns"))
    filter_ = get_str(body, "filter")
    return QueryRequest(
        k=get_int(body, "k"),
        offset=get_int(body, "offset") or 0,
        # Wrapped, so that Lance cannot ignore trailing text (see `whole_condition`).
        filter=whole_condition(filter_, "filter") if filter_ and filter_.strip() else None,
        prefilter=bool(get_bool(body, "prefilter")),
        names=names,
        aliases=aliases,
        with_row_id=bool(get_bool(body, "with_row_id")),
        fast_search=get_bool(body, "fast_search"),
        version=get_int(body, "version"),
        branch=get_str(body, "branch"),
        vector=parse_vector_query(body),
        text=parse_text_query(body),
    )


def _parse_columns(raw: object) -> tuple[list[str] | None, dict[str, str] | None]:
    if raw is None:
        return None, None
    # LanceDB's wire format: a bare list of names or a bare {alias: expression} map.
    if isinstance(raw, list):
        raw = {"column_names": raw}
    elif isinstance(raw, dict) and raw and not ({"column_names", "column_aliases"} & set(raw)):
        raw = {"column_aliases": raw}
    if not isinstance(raw, dict):
        raise InvalidInputError(
            "The member 'columns' must be an object with column_names or column_aliases."
        )
    names, aliases = raw.get("column_names"), get_dict(raw, "column_aliases")
    if names is not None and aliases is not None:
        raise InvalidInputError(
            "The member 'columns' has both column_names and column_aliases: send one of them."
        )
    if names is not None:
        if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and n for n in names
        ):
            raise InvalidInputError(
                "columns.column_names must be a non-empty array of field paths."
            )
        return list(names), None
    if aliases is not None:
        if not aliases or not all(isinstance(v, str) and v for v in aliases.values()):
            raise InvalidInputError(
                "columns.column_aliases must map each output name to a field path or SQL "
                "expression (a non-empty string)."
            )
        if not all(aliases):
            raise InvalidInputError("columns.column_aliases has an empty output name.")
        return None, dict(aliases)
    return None, None


# --------------------------------------------------------------------- handler
def query_table(call: Call) -> Response:
    try:
        return _run_query(call)
    except SchemaMismatchError as exc:
        # Lance calls an unknown column in a filter a "schema error": for a query it is
        # bad input, not a schema mismatch of written data.
        raise InvalidInputError(exc.detail) from exc


def _run_query(call: Call) -> Response:
    request = parse_request(call.body)
    ref = call.catalog.require_table(call.id)
    ds = call.catalog.dataset(ref, branch=request.branch, version=request.version)
    label = call.label
    columns = _projection(ds.schema, request)
    with lance_errors(f"Query on table {label!r} failed"):
        if request.vector is not None and request.text is not None:
            return _hybrid(ds, request, columns)
        if request.vector is not None:
            field = vector_column(ds.schema, request.vector.column)
            if request.vector.multi is not None and vector_kind(field.field.type) == "vector":
                return _batch_search(ds, request, columns, field)
            options = nearest_options(request.vector, field, request.search_k + request.offset)
            options["q"] = _as_arrow_vector(options["q"])
            scanner = ds.scanner(
                nearest=options, limit=request.search_k,
                **_common(request, _with_score(columns, "_distance")),
            )
        elif request.text is not None:
            fts = TextQueryBuilder(ds).build(request.text)
            scanner = ds.scanner(
                full_text_query=fts, limit=request.search_k,
                **_common(request, _with_score(columns, "_score")),
            )
        else:
            # Filter-only: k missing or 0 is no limit.
            scanner = ds.scanner(limit=request.k or None, **_common(request, columns))
        reader = scanner.to_reader()
    return arrow_file_response(reader, f"Query on table {label!r} failed")


def _as_arrow_vector(q: Any) -> Any:
    """A float32 query vector as an Arrow array: Lance takes it as it is, where a numpy
    array is copied through float64 first and deep-copied into the scanner (~0.02 ms)."""
    if isinstance(q, np.ndarray) and q.ndim == 1 and q.dtype == np.float32:
        return pa.array(q)
    return q


def _projection(schema: pa.Schema, request: QueryRequest) -> Columns:
    """Lance's ``columns``: canonical field paths, or {alias: path or SQL}."""
    if request.names is not None:
        return [resolve(schema, n, "column").path for n in request.names]
    if request.aliases is not None:
        out: dict[str, str] = {}
        for alias, source in request.aliases.items():
            is_path = _PATH.fullmatch(source) and source.lower() not in _SQL_LITERALS
            out[alias] = resolve(schema, source, "column").path if is_path else source
        return out
    return None


def _with_score(columns: Columns, score: str) -> Columns:
    """Name the score column explicitly: results carry it whatever the projection."""
    if isinstance(columns, list):
        return columns if score in columns else [*columns, score]
    if isinstance(columns, dict):
        return columns if score in columns else {**columns, score: score}
    return columns


def _common(request: QueryRequest, columns: Columns) -> dict[str, Any]:
    return {
        "columns": columns,
        "filter": request.filter,
        "prefilter": request.prefilter,
        "with_row_id": request.with_row_id,
        "fast_search": request.fast_search,
        "offset": request.offset or None,
    }


# ------------------------------------------------------------------ batch search
def _batch_search(
    ds: LanceDataset, request: QueryRequest, columns: Columns, field: ResolvedField
) -> Response:
    """Several query vectors on an ordinary vector column: top k for each query."""
    assert request.vector is not None
    k, offset = request.search_k, request.offset
    options = nearest_options(request.vector, field, k + offset)
    common = _common(request, _with_score(columns, "_distance"))
    common["offset"] = None
    table = ds.to_table(nearest=options, **common)
    if offset:
        # Lance applies offset to the whole batch; the contract's is per query.
        index = table.column("query_index")
        keep = []
        for q in range(len(request.vector.multi or [])):
            rows = pc.indices_nonzero(pc.equal(index, q))
            keep.extend(rows.to_pylist()[offset:offset + k])
        table = table.take(pa.array(keep, pa.int64()))
    return table_response(table)


# ---------------------------------------------------------------- hybrid search
def _hybrid(ds: LanceDataset, request: QueryRequest, columns: Columns) -> Response:
    """Vector + text, fused by reciprocal rank fusion (docs/query.md)."""
    assert request.vector is not None and request.text is not None
    field = vector_column(ds.schema, request.vector.column)
    if request.vector.multi is not None and vector_kind(field.field.type) == "vector":
        raise InvalidInputError(
            "A hybrid query takes one query vector: send single_vector with full_text_query, "
            "or drop full_text_query to run a batch of vectors."
        )
    depth = request.search_k + request.offset
    common = _common(request, columns)
    common.update(with_row_id=True, offset=None)
    by_vector = ds.to_table(
        nearest=nearest_options(request.vector, field, depth),
        limit=depth,
        **{**common, "columns": _with_score(columns, "_distance")},
    )
    by_text = ds.to_table(
        full_text_query=TextQueryBuilder(ds).build(request.text),
        limit=depth,
        **{**common, "columns": _with_score(columns, "_score")},
    )
    scores: dict[int, float] = {}
    distance: dict[int, float] = {}
    text_score: dict[int, float] = {}
    where: dict[int, tuple[int, int]] = {}
    for source, (table, score_name, kept) in enumerate(
        ((by_vector, "_distance", distance), (by_text, "_score", text_score))
    ):
        ids = table.column("_rowid").to_pylist()
        values = table.column(score_name).to_pylist()
        for rank, (row_id, value) in enumerate(zip(ids, values, strict=True)):
            scores[row_id] = scores.get(row_id, 0.0) + 1.0 / (RRF_K + rank + 1)
            kept[row_id] = value
            where.setdefault(row_id, (source, rank))
    ranked = sorted(scores, key=lambda r: (-scores[r], r))[request.offset:depth]
    base = [t.drop_columns([c for c in ("_distance", "_score") if c in t.column_names])
            for t in (by_vector, by_text)]
    pieces = [base[where[r][0]].slice(where[r][1], 1) for r in ranked]
    result = pa.concat_tables(pieces) if pieces else base[0].slice(0, 0)
    result = result.append_column(
        "_distance", pa.array([distance.get(r) for r in ranked], pa.float32())
    ).append_column(
        "_score", pa.array([text_score.get(r) for r in ranked], pa.float32())
    ).append_column(RELEVANCE, pa.array([scores[r] for r in ranked], pa.float32()))
    if not request.with_row_id:
        result = result.drop_columns(["_rowid"])
    return table_response(result)
