"""The immutable query builder: every call returns a new `Query`; only terminals send.

The body follows the namespace ``QueryTableRequest`` shape (SEED_SPEC.md "Query a table"),
so any server of the contract understands it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from nsframe import _frames, _infer, _sql, _upload
from nsframe._models import Ref
from nsframe._protocol import routes
from nsframe._protocol.defaults import DEFAULT_SEARCH_K, DISTANCE_TYPES
from nsframe._upload import Progress, ProgressArg
from nsframe.exceptions import InvalidInputError, ServerError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from nsframe._client import Client

_T = TypeVar("_T")


def _vector_json(vector: Any) -> tuple[str, list[Any]]:
    """(``single_vector`` | ``multi_vector``, plain lists) from a list or numpy array."""
    values = vector.tolist() if hasattr(vector, "tolist") else vector
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"A query vector must be a list or array of numbers, got {vector!r}.")
    values = list(values)
    if values and all(hasattr(v, "__len__") for v in values):
        return "multi_vector", [[float(x) for x in v] for v in values]
    try:
        return "single_vector", [float(x) for x in values]
    except (TypeError, ValueError) as exc:
        raise TypeError("A query vector must hold numbers only.") from exc


def _non_negative(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}.")
    return value


@dataclass(frozen=True)
class Query:
    """A query on one table, built step by step; nothing is sent before a terminal call.

    Create one with `Table.search`. Terminals: `to_arrow`, `to_pandas`, `to_polars`,
    `to_list`. `explain` returns the JSON body that will be sent.

    Example:
        >>> tbl.search([0.1, 0.2]).where("year > 2000").select(["title"]).limit(5).to_pandas()
    """

    client: Client
    ident: str
    ref: Ref = Ref()  # noqa: RUF009 (Ref is frozen, so one shared default is safe)
    vector: tuple[str, tuple[Any, ...]] | None = None
    text: str | None = None
    text_columns: tuple[str, ...] | None = None
    vector_column: str | None = None
    filter: str | None = None
    prefilter: bool | None = None
    columns: tuple[str, ...] | tuple[tuple[str, str], ...] | None = None
    k: int | None = None
    skip: int | None = None
    options: tuple[tuple[str, Any], ...] = ()

    # ------------------------------------------------------------------ builders
    def where(self, sql: str, params: Sequence[Any] | None = None,
              prefilter: bool | None = None) -> Query:
        """Keep rows matching the SQL condition; ``prefilter`` filters before the search.

        Values in ``params`` replace the ``?`` placeholders, safely quoted (a list fills
        ``IN (?)``), so data can never change the condition.

        Example:
            >>> tbl.search().where("cat = ? AND price < ?", ["it's", 3])

        Raises:
            ValueError: if the number of ``?`` and of values differ.
        """
        if not isinstance(sql, str) or not sql.strip():
            raise ValueError("where() needs a SQL condition such as \"year > 2000\".")
        if isinstance(params, bool):
            raise TypeError("where()'s second argument is the list of values for '?'; "
                            "pass prefilter= by name.")
        if params is not None:
            sql = _sql.bind(sql, params)
        return replace(self, filter=sql, prefilter=prefilter)

    def select(self, columns: Sequence[str] | Mapping[str, str]) -> Query:
        """Columns to return: a list of names, or ``{alias: expression}``."""
        if isinstance(columns, Mapping):
            return replace(self, columns=tuple((str(a), str(e)) for a, e in columns.items()))
        if isinstance(columns, str):
            raise TypeError("select() takes a list of column names, not one string.")
        return replace(self, columns=tuple(str(c) for c in columns))

    def limit(self, k: int) -> Query:
        """Return at most ``k`` rows (for a plain scan, 0 means no limit)."""
        return replace(self, k=_non_negative("limit", k))

    def offset(self, n: int) -> Query:
        """Skip the first ``n`` results."""
        return replace(self, skip=_non_negative("offset", n))

    def _option(self, key: str, value: Any) -> Query:
        options = dict(self.options)
        options[key] = value
        return replace(self, options=tuple(sorted(options.items())))

    def distance_type(self, name: str) -> Query:
        """The metric: ``l2`` (or ``euclidean``), ``cosine``, ``dot`` or ``hamming``."""
        if name.lower() not in DISTANCE_TYPES:
            raise ValueError(f"distance_type must be one of {', '.join(DISTANCE_TYPES)}; "
                             f"got {name!r}.")
        return self._option("distance_type", name.lower())

    def metric(self, name: str) -> Query:
        """Alias of `distance_type` (LanceDB's older name)."""
        return self.distance_type(name)

    def nprobes(self, n: int) -> Query:
        """How many IVF partitions to search."""
        return self._option("nprobes", _non_negative("nprobes", n))

    def refine_factor(self, n: int) -> Query:
        """Re-rank ``k * n`` candidates with exact distances."""
        return self._option("refine_factor", _non_negative("refine_factor", n))

    def ef(self, n: int) -> Query:
        """HNSW search effort."""
        return self._option("ef", _non_negative("ef", n))

    def fast_search(self, enabled: bool = True) -> Query:
        """Search only indexed data (skip rows added since the index was built)."""
        return self._option("fast_search", bool(enabled))

    def bypass_vector_index(self, enabled: bool = True) -> Query:
        """Exact (brute-force) search even when an index exists."""
        return self._option("bypass_vector_index", bool(enabled))

    def distance_range(self, lower_bound: float | None = None,
                       upper_bound: float | None = None) -> Query:
        """Keep results whose distance is in ``[lower_bound, upper_bound)``."""
        query = self
        if lower_bound is not None:
            query = query._option("lower_bound", float(lower_bound))
        if upper_bound is not None:
            query = query._option("upper_bound", float(upper_bound))
        return query

    def with_row_id(self, enabled: bool = True) -> Query:
        """Add the ``_rowid`` column."""
        return self._option("with_row_id", bool(enabled))

    def at(self, version: int) -> Query:
        """The same query on an older version of the table."""
        return replace(self, ref=replace(self.ref, version=_non_negative("version", version),
                                         tag=None))

    def branch(self, name: str) -> Query:
        """The same query on a branch of the table."""
        return replace(self, ref=Ref(branch=name or None))

    # ------------------------------------------------------------------ the body
    def explain(self) -> dict[str, Any]:
        """The JSON body the terminals send (``QueryTableRequest``)."""
        body: dict[str, Any] = {}
        if self.vector is not None:
            kind, values = self.vector
            body["vector"] = {kind: [list(v) if isinstance(v, tuple) else v for v in values]}
            body["k"] = self.k if self.k is not None else DEFAULT_SEARCH_K
        elif self.text is not None:
            # Upstream servers require the `vector` member even without one: sent empty.
            body["vector"] = {}
            body["k"] = self.k if self.k is not None else DEFAULT_SEARCH_K
        else:
            # A plain scan: k=0 means every matching row; `vector` empty, as above.
            body["vector"] = {}
            body["k"] = self.k or 0
        if self.text is not None:
            string_query: dict[str, Any] = {"query": self.text}
            if self.text_columns:
                string_query["columns"] = list(self.text_columns)
            body["full_text_query"] = {"string_query": string_query}
        if self.vector_column is not None:
            body["vector_column"] = self.vector_column
        if self.filter is not None:
            body["filter"] = self.filter
        if self.prefilter is not None:
            body["prefilter"] = self.prefilter
        if self.columns is not None:
            if self.columns and isinstance(self.columns[0], tuple):
                body["columns"] = {"column_aliases": {a: e for a, e in self.columns}}
            else:
                body["columns"] = {"column_names": list(self.columns)}
        if self.skip:
            body["offset"] = self.skip
        body.update(self.options)
        if self.ref.version is not None:
            body["version"] = self.ref.version
        if self.ref.branch is not None:
            body["branch"] = self.ref.branch
        return body

    # ------------------------------------------------------------------ terminals
    def to_arrow(self, *, progress: ProgressArg = None) -> pa.Table:
        """Run the query; the result as a pyarrow Table.

        ``progress``, counted per record batch as the answer arrives: True for a bar, a
        callable ``(rows_done, bytes_done)``, False for nothing, or None: a bar once
        more than a million rows have arrived, when someone watches.
        """
        meter = Progress(progress, total_rows=None, desc=f"query {self.ident}",
                         show_by_default=False, auto_rows=_upload.AUTO_PROGRESS_ROWS)
        try:
            # Without anything to show, the answer is decoded in one call.
            on_batch = meter.update if meter.active else None
            return self._send(lambda body: self.client.query(self.ident, body,
                                                             on_batch=on_batch))
        finally:
            meter.close()

    def _send(self, send: Callable[[dict[str, Any]], _T]) -> _T:
        """``send(body)``; when the server refuses a search that names no vector or text
        column (one that does not pick them by itself), once more with them named."""
        try:
            return send(self.explain())
        except (InvalidInputError, ServerError):
            named = self._with_inferred_columns()
            if named is None:
                raise
        return send(named.explain())

    def _with_inferred_columns(self) -> Query | None:
        """This query with the vector column and text columns named from the schema, as
        nsframe's server picks them (see `_infer`); None when there is nothing to name
        or no single choice."""
        wants_vector = self.vector is not None and self.vector_column is None
        wants_text = self.text is not None and not self.text_columns
        if not (wants_vector or wants_text):
            return None
        schema = _infer.table_schema(self.client, self.ident, self.ref)
        if schema is None:
            return None
        named = self
        if wants_vector:
            found = _infer.vector_columns(schema)
            if len(found) != 1:
                return None
            named = replace(named, vector_column=found[0])
        if wants_text:
            texts = _infer.text_columns(schema)
            if not texts:
                return None
            named = replace(named, text_columns=tuple(texts))
        return named

    def explain_plan(self, verbose: bool = False) -> str:
        """How the server will run this query: its physical plan, as text (as LanceDB's
        ``explain_plan``)."""
        return self._send(lambda body: self.client.explain_plan(self.ident, body,
                                                                verbose=verbose))

    def analyze_plan(self) -> str:
        """Run the query once and return its plan with what each step did (rows, time,
        I/O), as text (as LanceDB's ``analyze_plan``)."""
        return self._send(lambda body: self.client.analyze_plan(self.ident, body))

    def to_pandas(self, *, dtype_backend: str | None = "numpy_nullable",
                  progress: ProgressArg = None) -> pd.DataFrame:
        """Run the query; the result as a pandas DataFrame (``progress``: see `to_arrow`)."""
        return _frames.to_pandas(self.to_arrow(progress=progress), dtype_backend=dtype_backend)

    def to_polars(self, *, progress: ProgressArg = None) -> pl.DataFrame:
        """Run the query; the result as a polars DataFrame (``progress``: see `to_arrow`)."""
        return _frames.to_polars(self.to_arrow(progress=progress))

    def to_list(self) -> list[dict[str, Any]]:
        """Run the query; the result as a list of row dicts."""
        return list(self.to_arrow().to_pylist())

    # ------------------------------------------------------------------ display
    def _request_text(self) -> str:
        path = routes.TABLE_QUERY.replace("{id}", self.ident)
        return f"POST {path}\n{json.dumps(self.explain(), indent=2, sort_keys=True)}"

    def __repr__(self) -> str:
        body = json.dumps(self.explain(), sort_keys=True)
        if len(body) > 300:
            body = body[:297] + "..."
        return f"Query({self.ident!r}, {body})"

    def _repr_html_(self) -> str:
        return (f"<div><b>nsframe Query</b> on <code>{html.escape(self.ident)}</code>"
                f"<pre>{html.escape(self._request_text())}</pre></div>")


def new_query(client: Client, ident: str, ref: Ref, vector: Any, text: str | None,
              column: str | None, fts_columns: Sequence[str] | None) -> Query:
    """A search as `Table.search` starts it."""
    if isinstance(vector, str):
        vector, text = None, vector if text is None else text
    encoded = None
    if vector is not None:
        kind, values = _vector_json(vector)
        encoded = (kind, tuple(tuple(v) if isinstance(v, list) else v for v in values))
    if text is not None and not isinstance(text, str):
        raise TypeError("text must be a string.")
    text_columns: tuple[str, ...] | None = tuple(fts_columns) if fts_columns else None
    if vector is None and text is not None and column is not None and text_columns is None:
        text_columns, column = (column,), None
    return Query(client=client, ident=ident, ref=ref, vector=encoded, text=text,
                 text_columns=text_columns, vector_column=column)
