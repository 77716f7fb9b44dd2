"""`POST /v1/table/{id}/query`: vector, full-text, hybrid and filter-only queries.

The body arrives checked whole (`_models.query.QueryRequest`) before Lance runs
anything; the table comes from the catalog's cache of opened datasets (see `_catalog`),
so a query never re-opens it.
docs/query.md describes every member, the defaults and the hybrid fusion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.dataset import LanceDataset, LanceScanner
from starlette.responses import JSONResponse, Response

from nsframe._protocol.routes import READ_VERSION_HEADER
from nsframe.exceptions import InvalidInputError, SchemaMismatchError
from nsframe.server._http.handler import Call
from nsframe.server._http.in_process import accepts_arrow
from nsframe.server._http.results import arrow_file_response, table_response
from nsframe.server._limits import Limits
from nsframe.server._models.query import ExplainRequest, QueryRequest, check_search_depth
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_kind
from nsframe.server._search.fts import TextQueryBody, TextQueryBuilder
from nsframe.server._search.vector import VectorQuery, nearest_options, vector_column
from nsframe.server._storage.errors import lance_errors

# Reciprocal rank fusion constant, as in the RRF paper and LanceDB.
RRF_K = 60
RELEVANCE = "_relevance_score"
# Columns a query may name that are not in the table.
SEARCH_COLUMNS = ("_distance", "_score", "_rowid", "_rowaddr", "_rowoffset")
# A field path (plain or backtick-quoted segments); any other alias value is SQL.
_SEGMENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_PATH = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})*")
_SQL_LITERALS = {"true", "false", "null"}

Columns = list[str] | dict[str, str] | None


# --------------------------------------------------------------------- handler
def query_table(call: Call[QueryRequest]) -> Response:
    try:
        return _run_query(call)
    except SchemaMismatchError as exc:
        # Lance calls an unknown column in a filter a "schema error": for a query it is
        # bad input, not a schema mismatch of written data.
        raise InvalidInputError(exc.detail) from exc


def _run_query(call: Call[QueryRequest]) -> Response:
    request = call.args
    vector, text = request.vector_query(), request.full_text_query
    ds, schema = _dataset(call, request)
    columns = _projection(schema, request)
    response = _answer(call, ds, schema, columns, vector, text)
    # The version the rows reflect: LanceDB's client asks for at least it next time, and
    # nsframe's pins the further pages of a whole-table read to it (no describe first).
    response.headers[READ_VERSION_HEADER] = str(ds.version)
    return response


def _answer(call: Call[QueryRequest], ds: LanceDataset, schema: pa.Schema, columns: Columns,
            vector: VectorQuery | None, text: TextQueryBody | None) -> Response:
    request = call.args
    context = f"Query on table {call.label!r} failed"
    with lance_errors(context, lambda: schema.names):
        if vector is not None and text is not None:
            return _hybrid(ds, schema, request, vector, text, columns)
        if vector is not None:
            field = vector_column(schema, vector.column)
            if vector.multi is not None and vector_kind(field.field.type) == "vector":
                return _batch_search(ds, request, vector, columns, field, call.limits)
        reader = _scanner(ds, request, columns, schema).to_reader()
    return arrow_file_response(reader, context, call.work,
                               as_arrow=accepts_arrow(call.request))


def _dataset(call: Call[Any], request: QueryRequest) -> tuple[LanceDataset, pa.Schema]:
    """The dataset a query reads, with its schema: the version asked for, else the
    latest, which holds every version a LanceDB client's freshness headers ask for (each
    request reads the newest manifest, so no answer is ever older than a write the client
    saw)."""
    ref = call.catalog.require_table(call.id)
    ds = call.catalog.dataset(ref, branch=request.branch, version=request.version)
    return ds, call.catalog.schema(ref, request.branch, ds)


def _scanner(ds: LanceDataset, request: QueryRequest, columns: Columns,
             schema: pa.Schema) -> LanceScanner:
    """The scanner of a query that is one Lance scan: one query vector, a text search,
    or a filter. (Hybrid queries and batches of vectors run several.)"""
    vector, text = request.vector_query(), request.full_text_query
    if vector is not None:
        field = vector_column(schema, vector.column)
        options = nearest_options(vector, field, request.search_k + request.skip)
        options["q"] = _as_arrow_vector(options["q"])
        return ds.scanner(
            nearest=options, limit=request.search_k,
            **_common(request, _with_score(columns, "_distance")),
        )
    if text is not None:
        fts = TextQueryBuilder(ds, schema).build(text)
        return ds.scanner(
            full_text_query=fts, limit=request.search_k,
            **_common(request, _with_score(columns, "_score")),
        )
    # Filter-only: k missing or 0 is no limit.
    return ds.scanner(limit=request.k or None, **_common(request, columns))


# ------------------------------------------------------------------------- plans
def explain_plan(call: Call[ExplainRequest]) -> Response:
    """ExplainTableQueryPlan: the physical plan of the query, as a JSON string."""
    request = call.args.query
    assert request is not None  # ExplainRequest requires it
    if request.branch is None:
        request.branch = call.args.branch
    return JSONResponse(_plan(call, request, lambda s: s.explain_plan(call.args.verbose)))


def analyze_plan(call: Call[QueryRequest]) -> Response:
    """AnalyzeTableQueryPlan: the plan run once, with its metrics, as a JSON string."""
    return JSONResponse(_plan(call, call.args, lambda s: s.analyze_plan()))


def _plan(call: Call[Any], request: QueryRequest, render: Callable[[Any], str]) -> str:
    vector, text = request.vector_query(), request.full_text_query
    ds, schema = _dataset(call, request)
    if vector is not None and (text is not None or (
            vector.multi is not None
            and vector_kind(vector_column(schema, vector.column).field.type) == "vector")):
        raise InvalidInputError(
            "A plan is shown for one scan: a single vector, a text search or a filter. A "
            "hybrid query or a batch of vectors runs several; explain each part alone."
        )
    with lance_errors(f"Planning the query on table {call.label!r} failed"):
        text_plan = render(_scanner(ds, request, _projection(schema, request), schema))
    # The plan names the dataset's folder: show the table's name instead.
    folder = ds.uri.rstrip("/")
    return str(text_plan).replace(folder, call.label).replace(folder.lstrip("/"), call.label)


def _as_arrow_vector(q: Any) -> Any:
    """A float32 query vector as an Arrow array: Lance takes it as it is, where a numpy
    array is copied through float64 first and deep-copied into the scanner (~0.02 ms)."""
    if isinstance(q, np.ndarray) and q.ndim == 1 and q.dtype == np.float32:
        return pa.array(q)
    return q


def _projection(schema: pa.Schema, request: QueryRequest) -> Columns:
    """Lance's ``columns``: canonical field paths, or {alias: path or SQL}. The columns a
    search adds (``_distance``, ``_score``) and ``_rowid`` may be named too, as Lance
    and the reference server allow, unless the table has a column of that name."""
    names, aliases = request.projection()
    if names is not None:
        return [n if n in SEARCH_COLUMNS and n not in schema.names
                else resolve(schema, n, "column").path for n in names]
    if aliases is not None:
        out: dict[str, str] = {}
        for alias, source in aliases.items():
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
        "filter": request.condition,
        "prefilter": bool(request.prefilter),
        "with_row_id": bool(request.with_row_id),
        "fast_search": request.fast_search,
        "offset": request.skip or None,
    }


# ------------------------------------------------------------------ batch search
def _batch_search(ds: LanceDataset, request: QueryRequest, vector: VectorQuery,
                  columns: Columns, field: ResolvedField, limits: Limits) -> Response:
    """Several query vectors on an ordinary vector column: top k for each query."""
    k, offset = request.search_k, request.skip
    check_search_depth(k + offset, limits, queries=len(vector.multi or []))
    options = nearest_options(vector, field, k + offset)
    common = _common(request, _with_score(columns, "_distance"))
    common["offset"] = None
    table = ds.to_table(nearest=options, **common)
    if offset:
        # Lance applies offset to the whole batch; the contract's is per query.
        index = table.column("query_index")
        keep = []
        for q in range(len(vector.multi or [])):
            rows = pc.indices_nonzero(pc.equal(index, q))
            keep.extend(rows.to_pylist()[offset:offset + k])
        table = table.take(pa.array(keep, pa.int64()))
    return table_response(table)


# ---------------------------------------------------------------- hybrid search
def _hybrid(ds: LanceDataset, schema: pa.Schema, request: QueryRequest, vector: VectorQuery,
            text: TextQueryBody, columns: Columns) -> Response:
    """Vector + text, fused by reciprocal rank fusion (docs/query.md)."""
    field = vector_column(schema, vector.column)
    if vector.multi is not None and vector_kind(field.field.type) == "vector":
        raise InvalidInputError(
            "A hybrid query takes one query vector: send single_vector with full_text_query, "
            "or drop full_text_query to run a batch of vectors."
        )
    depth = request.search_k + request.skip
    common = _common(request, columns)
    common.update(with_row_id=True, offset=None)
    by_vector = ds.to_table(
        nearest=nearest_options(vector, field, depth),
        limit=depth,
        **{**common, "columns": _with_score(columns, "_distance")},
    )
    by_text = ds.to_table(
        full_text_query=TextQueryBuilder(ds, schema).build(text),
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
    ranked = sorted(scores, key=lambda r: (-scores[r], r))[request.skip:depth]
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
