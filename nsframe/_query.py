"""The immutable query builder: every call returns a new `Query`; only terminals send.

The body follows the namespace ``QueryTableRequest`` shape (spec/SEED_SPEC.md "Query a table"),
so any server of the contract understands it.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import html
import json
import math
import warnings
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


def _vector_json(vector: Any) -> tuple[str, tuple[Any, ...]]:
    """(``single_vector`` | ``multi_vector``, the numbers as tuples) from a list or a
    numpy array; NaN and infinity are refused here (JSON has no way to send them)."""
    kind = getattr(getattr(vector, "dtype", None), "kind", None)
    if kind == "f" and getattr(vector, "ndim", 0) in (1, 2):
        # A float array: tolist() gives Python floats already (a query's hot path).
        values = vector.tolist()
        if vector.ndim == 1:
            _check_finite(values)
            return "single_vector", tuple(values)
        for i, row in enumerate(values):
            _check_finite(row, i)
        return "multi_vector", tuple(tuple(row) for row in values)
    values = vector.tolist() if hasattr(vector, "tolist") else vector
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"A query vector must be a list or array of numbers, got {vector!r}.")
    values = list(values)
    multi = bool(values) and all(hasattr(v, "__len__") for v in values)
    try:
        rows = tuple(tuple(float(x) for x in v) for v in values) if multi \
            else (tuple(float(x) for x in values),)
    except (TypeError, ValueError) as exc:
        raise TypeError("A query vector must hold numbers only.") from exc
    for i, row in enumerate(rows):
        _check_finite(row, i if multi else None)
    return ("multi_vector", rows) if multi else ("single_vector", rows[0])


def _check_finite(values: Sequence[float], row: int | None = None) -> None:
    total = sum(values)
    if total - total == 0.0:  # NaN and infinity would make it NaN: all finite
        return
    for position, value in enumerate(values):
        if not math.isfinite(value):
            where = f"vector {row} of the query" if row is not None else "the query vector"
            raise ValueError(
                f"{where[0].upper()}{where[1:]} holds {value!r} at position {position}: a "
                "search needs finite numbers (drop or fill the missing values first)."
            )


def _non_negative(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}.")
    return value


@dataclass(frozen=True)
class Query:
    """A query on one table, built step by step; nothing is sent before a terminal call.

    Create one with `Table.search`. Terminals: `to_arrow`, `to_pandas`, `to_polars`,
    `to_list`. `request_body` returns the JSON body that will be sent.

    A filter on a vector or full-text search is applied before the search (prefilter, as
    in LanceDB), so ``limit(k)`` returns k matching rows whenever k rows match;
    `postfilter` (or ``where(..., prefilter=False)``) filters the k nearest instead.

    Example:
        >>> tbl.search([0.1, 0.9]).where("id > 1").select(["name"]).limit(1).to_pandas()
            name  _distance
        0  cocoa       0.32
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
    # The text a vector was embedded from (for a reranker), and the reranker.
    query_text: str | None = None
    reranker: Any = None

    # ------------------------------------------------------------------ builders
    def where(self, sql: str, params: Sequence[Any] | bool | None = None, *,
              prefilter: bool | None = None) -> Query:
        """Keep rows matching the SQL condition. Several calls combine with AND.

        Values in ``params`` replace the ``?`` placeholders, safely quoted (a list fills
        ``IN (?)``), so data can never change the condition. A search filters before it
        ranks (``prefilter=True``, the default); ``prefilter=False`` filters the ranked
        rows, as `postfilter` does. A bool as the second argument is ``prefilter``, as in
        LanceDB's ``where(sql, prefilter)``.

        Example:
            >>> tbl.search().where("name = ? OR id > ?", ["it's", 2]).select(["id"]).to_list()
            [{'id': 3}]
            >>> tbl.search().where("id > 1").where("id < 3").select(["id"]).to_list()   # AND
            [{'id': 2}]

        Raises:
            ValueError: if the number of ``?`` and of values differ.
        """
        if not isinstance(sql, str) or not sql.strip():
            raise ValueError("where() needs a SQL condition such as \"year > 2000\".")
        if isinstance(params, bool):
            if prefilter is not None and prefilter is not params:
                raise TypeError("where() got prefilter twice, with different values.")
            params, prefilter = None, params
        if params is not None:
            sql = _sql.bind(sql, params)
        if self.filter is not None:
            # Parenthesised, so an OR in either condition keeps its meaning.
            sql = f"({self.filter}) AND ({sql})"
        return replace(self, filter=sql,
                       prefilter=self.prefilter if prefilter is None else prefilter)

    def postfilter(self) -> Query:
        """Filter after the search: the k nearest rows, then those matching `where`, so
        fewer than k may come back (LanceDB's ``postfilter()``).

        Example:
            >>> tbl.search([0.1, 0.9]).where("id > 1").postfilter().limit(1).to_list()   # id 1 won
            []
            >>> tbl.search([0.1, 0.9]).where("id > 1").limit(1).select(["id"]).to_list()
            [{'id': 3, '_distance': 0.31...}]
        """
        return replace(self, prefilter=False)

    def select(self, columns: Sequence[str] | Mapping[str, str]) -> Query:
        """Columns to return: a list of names, or ``{alias: expression}``.

        Example:
            >>> tbl.search().select(["id", "name"]).limit(1).to_list()
            [{'id': 1, 'name': 'tea'}]
            >>> tbl.search().select({"double": "id * 2"}).to_list()
            [{'double': 2}, {'double': 4}, {'double': 6}]
        """
        if isinstance(columns, Mapping):
            return replace(self, columns=tuple((str(a), str(e)) for a, e in columns.items()))
        if isinstance(columns, str):
            raise TypeError("select() takes a list of column names, not one string.")
        return replace(self, columns=tuple(str(c) for c in columns))

    def limit(self, k: int | None) -> Query:
        """Return at most ``k`` rows; ``limit(0)`` returns none (as ``df.head(0)``).

        ``None`` restores the default: every row of a plain scan, 10 for a search.

        Example:
            >>> tbl.search().limit(2).to_arrow().num_rows, tbl.search().limit(0).to_arrow().num_rows
            (2, 0)
        """
        return replace(self, k=None if k is None else _non_negative("limit", k))

    def offset(self, n: int) -> Query:
        """Skip the first ``n`` results.

        Example:
            >>> tbl.search().select(["id"]).offset(1).to_list()
            [{'id': 2}, {'id': 3}]
        """
        return replace(self, skip=_non_negative("offset", n))

    def _option(self, key: str, value: Any) -> Query:
        options = dict(self.options)
        options[key] = value
        return replace(self, options=tuple(sorted(options.items())))

    def distance_type(self, name: str) -> Query:
        """The metric: ``l2`` (or ``euclidean``), ``cosine``, ``dot`` or ``hamming``.

        Example:
            >>> tbl.search([0.2, 0.8]).distance_type("cosine").select(["id"]).limit(1).to_list()
            [{'id': 1, '_distance': 0.00...}]
        """
        if name.lower() not in DISTANCE_TYPES:
            raise ValueError(f"distance_type must be one of {', '.join(DISTANCE_TYPES)}; "
                             f"got {name!r}.")
        return self._option("distance_type", name.lower())

    def metric(self, name: str) -> Query:
        """Alias of `distance_type` (LanceDB's older name, kept for code written for it).

        Example:
            >>> tbl.search([0.2, 0.8]).metric("dot").request_body()["distance_type"]
            'dot'
        """
        return self.distance_type(name)

    def nprobes(self, n: int) -> Query:
        """How many IVF partitions to search.

        Example:
            >>> tbl.search([0.2, 0.8]).nprobes(20).request_body()["nprobes"]
            20
        """
        return self._option("nprobes", _non_negative("nprobes", n))

    def refine_factor(self, n: int) -> Query:
        """Re-rank ``k * n`` candidates with exact distances.

        Example:
            >>> tbl.search([0.2, 0.8]).refine_factor(5).request_body()["refine_factor"]
            5
        """
        return self._option("refine_factor", _non_negative("refine_factor", n))

    def ef(self, n: int) -> Query:
        """HNSW search effort.

        Example:
            >>> tbl.search([0.2, 0.8]).ef(64).request_body()["ef"]
            64
        """
        return self._option("ef", _non_negative("ef", n))

    def fast_search(self, enabled: bool = True) -> Query:
        """Search only indexed data (skip rows added since the index was built).

        Example:
            >>> tbl.search([0.2, 0.8]).fast_search().request_body()["fast_search"]
            True
        """
        return self._option("fast_search", bool(enabled))

    def bypass_vector_index(self, enabled: bool = True) -> Query:
        """Exact (brute-force) search even when an index exists.

        Example:
            >>> tbl.search([0.2, 0.8]).bypass_vector_index().limit(1).select(["id"]).to_list()
            [{'id': 1, '_distance': 0.01...}]
        """
        return self._option("bypass_vector_index", bool(enabled))

    def distance_range(self, lower_bound: float | None = None,
                       upper_bound: float | None = None) -> Query:
        """Keep results whose distance is in ``[lower_bound, upper_bound)``.

        Example:
            >>> tbl.search([0.1, 0.9]).distance_range(0.0, 0.5).select(["id"]).to_list()
            [{'id': 1, '_distance': 0.0}, {'id': 3, '_distance': 0.31...}]
        """
        query = self
        if lower_bound is not None:
            query = query._option("lower_bound", float(lower_bound))
        if upper_bound is not None:
            query = query._option("upper_bound", float(upper_bound))
        return query

    def with_row_id(self, enabled: bool = True) -> Query:
        """Add the ``_rowid`` column.

        Example:
            >>> tbl.search().with_row_id().select(["id"]).limit(1).to_list()
            [{'id': 1, '_rowid': 0}]
        """
        return self._option("with_row_id", bool(enabled))

    def at(self, version: int) -> Query:
        """The same query on an older version of the table.

        Example:
            >>> _ = tbl.delete("id = 1")
            >>> tbl.search().at(1).to_arrow().num_rows, tbl.search().to_arrow().num_rows
            (3, 2)
        """
        return replace(self, ref=replace(self.ref, version=_non_negative("version", version),
                                         tag=None))

    def branch(self, name: str) -> Query:
        """The same query on a branch of the table.

        Example:
            >>> dev = tbl.branches.create("dev")
            >>> _ = dev.delete("id = 1")
            >>> tbl.search().branch("dev").to_arrow().num_rows
            2
        """
        return replace(self, ref=Ref(branch=name or None))

    def rerank(self, reranker: Any = None, query_string: str | None = None) -> Query:
        """Re-order the results with ``reranker`` (`nsframe.rerankers`; default
        reciprocal rank fusion), in this client. A hybrid search then runs its vector
        and full-text halves apart and the reranker fuses them (LanceDB's ``rerank``).
        ``query_string`` is the text a reranker such as a cross-encoder reads (by default
        the text that was searched).

        Example:
            >>> from nsframe.rerankers import LinearCombinationReranker
            >>> tbl.create_fts_index("name")
            IndexInfo(...)
            >>> hybrid = tbl.search([0.1, 0.9], text="tea").limit(2)
            >>> hybrid.rerank(LinearCombinationReranker(weight=0.7)).to_pandas()["id"].tolist()
            [1, ...]
        """
        if reranker is None:
            from nsframe.rerankers import RRFReranker

            reranker = RRFReranker()
        if not hasattr(reranker, "rerank_hybrid"):
            raise TypeError(f"rerank() takes a reranker from nsframe.rerankers, got "
                            f"{reranker!r}.")
        text = query_string if query_string is not None else self.query_text
        return replace(self, reranker=reranker, query_text=text)

    # ------------------------------------------------------------------ the body
    def request_body(self) -> dict[str, Any]:
        """The JSON body the terminals send (``QueryTableRequest``); nothing is sent.

        (For the plan the server would run, see ``explain_plan``.)

        Example:
            >>> tbl.search([0.1, 0.9]).where("id > 1").limit(2).request_body()
            {'vector': {'single_vector': [0.1, 0.9]}, 'k': 2, 'filter': 'id > 1', 'prefilter': True}
        """
        return self._body(self.k)

    def explain(self) -> dict[str, Any]:
        """Deprecated: the request body, now `request_body`. Elsewhere (LanceDB, SQL)
        explain means a query plan, which ``explain_plan`` gives.

        Example:
            >>> import warnings
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", DeprecationWarning)
            ...     tbl.search().limit(1).explain() == tbl.search().limit(1).request_body()
            True
        """
        warnings.warn("Query.explain() returns the request body and is renamed "
                      "request_body(); for the query plan use explain_plan().",
                      DeprecationWarning, stacklevel=2)
        return self.request_body()

    @property
    def is_search(self) -> bool:
        """Whether this is a vector or full-text search (rather than a plain scan).

        Example:
            >>> tbl.search([0.1, 0.9]).is_search, tbl.search("tea").is_search
            (True, True)
            >>> tbl.search().is_search
            False
        """
        return self.vector is not None or self.text is not None

    def _body(self, k: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.vector is not None:
            kind, values = self.vector
            body["vector"] = {kind: list(values) if kind == "single_vector"
                              else [list(v) for v in values]}
            body["k"] = k if k is not None else DEFAULT_SEARCH_K
        elif self.text is not None:
            # Upstream servers require the `vector` member even without one: sent empty.
            body["vector"] = {}
            body["k"] = k if k is not None else DEFAULT_SEARCH_K
        else:
            # A plain scan: k=0 means every matching row; `vector` empty, as above.
            body["vector"] = {}
            body["k"] = k or 0
        if self.text is not None:
            string_query: dict[str, Any] = {"query": self.text}
            if self.text_columns:
                string_query["columns"] = list(self.text_columns)
            body["full_text_query"] = {"string_query": string_query}
        if self.vector_column is not None:
            body["vector_column"] = self.vector_column
        if self.filter is not None:
            body["filter"] = self.filter
        if self.filter is not None and self.is_search:
            # Sent always, since a server's own default may be to filter afterwards.
            body["prefilter"] = True if self.prefilter is None else self.prefilter
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

        Example:
            >>> tbl.search([0.1, 0.9]).limit(2).select(["id"]).to_arrow()
            pyarrow.Table
            id: int64
            _distance: float
            ----
            id: [[1,3]]
            _distance: [[0,0.32]]
        """
        if self.reranker is not None:
            from nsframe.rerankers import run

            return run(self)
        meter = Progress(progress, total_rows=None, desc=f"query {self.ident}",
                         show_by_default=False, auto_rows=_upload.AUTO_PROGRESS_ROWS)
        try:
            if self.k == 0:
                # No rows, but the columns the query would return: ask for one, keep none.
                return self.client.query(self.ident, self._body(1)).slice(0, 0)
            # Without anything to show, the answer is decoded in one call.
            on_batch = meter.update if meter.active else None
            return self._send(lambda body: self.client.query(self.ident, body,
                                                             on_batch=on_batch))
        finally:
            meter.close()

    def to_arrow_with_version(self) -> tuple[pa.Table, int | None]:
        """The result and the table version its rows reflect (None when the server does
        not say): what a read in pages pins its further pages to.

        Example:
            >>> table, version = tbl.search().to_arrow_with_version()
            >>> table.num_rows, version
            (3, 1)
        """
        return self._send(lambda body: self.client.query_with_version(self.ident, body))

    def _send(self, send: Callable[[dict[str, Any]], _T]) -> _T:
        """``send(body)``; when the server refuses a search that names no vector or text
        column (one that does not pick them by itself), once more with them named."""
        try:
            return send(self.request_body())
        except (InvalidInputError, ServerError):
            named = self._with_inferred_columns()
            if named is None:
                raise
        return send(named.request_body())

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
        ``explain_plan``).

        Example:
            >>> "LanceRead" in tbl.search().where("id > 1").explain_plan()
            True
        """
        return self._send(lambda body: self.client.explain_plan(self.ident, body,
                                                                verbose=verbose))

    def analyze_plan(self) -> str:
        """Run the query once and return its plan with what each step did (rows, time,
        I/O), as text (as LanceDB's ``analyze_plan``).

        Example:
            >>> "output_rows" in tbl.search().where("id > 1").analyze_plan()
            True
        """
        return self._send(lambda body: self.client.analyze_plan(self.ident, body))

    def to_pandas(self, *, dtype_backend: str | None = "numpy_nullable",
                  progress: ProgressArg = None) -> pd.DataFrame:
        """Run the query; the result as a pandas DataFrame (``progress``: see `to_arrow`).

        Example:
            >>> tbl.search([0.1, 0.9]).limit(2).to_pandas()
               id   name      vector  _distance
            0   1    tea  [0.1, 0.9]        0.0
            1   3  cocoa  [0.5, 0.5]       0.32
        """
        return _frames.to_pandas(self.to_arrow(progress=progress), dtype_backend=dtype_backend)

    def to_polars(self, *, progress: ProgressArg = None) -> pl.DataFrame:
        """Run the query; the result as a polars DataFrame (``progress``: see `to_arrow`).

        Example:
            >>> tbl.search().select(["id", "name"]).to_polars()
            shape: (3, 2)
            ┌─────┬────────┐
            │ id  ┆ name   │
            │ --- ┆ ---    │
            │ i64 ┆ str    │
            ╞═════╪════════╡
            │ 1   ┆ tea    │
            │ 2   ┆ coffee │
            │ 3   ┆ cocoa  │
            └─────┴────────┘
        """
        return _frames.to_polars(self.to_arrow(progress=progress))

    def to_list(self) -> list[dict[str, Any]]:
        """Run the query; the result as a list of row dicts.

        Example:
            >>> tbl.search([0.1, 0.9]).limit(1).to_list()
            [{'id': 1, 'name': 'tea', 'vector': [0.10..., 0.89...], '_distance': 0.0}]
        """
        return list(self.to_arrow().to_pylist())

    # ------------------------------------------------------------------ display
    def _summary(self) -> list[str]:
        """What the query asks, one short line each, vectors abbreviated."""
        if self.vector is not None and self.text is not None:
            kind = "hybrid search"
        elif self.vector is not None:
            kind = "vector search"
        elif self.text is not None:
            kind = "full-text search"
        else:
            kind = "scan"
        k = self.k if self.k is not None else (DEFAULT_SEARCH_K if self.is_search else None)
        head = f"{kind}, limit {k}" if k is not None else f"{kind}, every row"
        lines = [f"Query on {self.ident!r} ({self.ref.describe()}): {head}"]
        if self.vector is not None:
            kind_name, values = self.vector
            shown = (_short_vector(values) if kind_name == "single_vector"
                     else f"{len(values)} vectors of {len(values[0]) if values else 0}")
            column = f" in {self.vector_column!r}" if self.vector_column else ""
            lines.append(f"  vector{column}: {shown}")
            if self.query_text is not None:
                lines.append(f"  embedded from: {self.query_text!r}")
        if self.text is not None:
            columns = f" in {', '.join(self.text_columns)}" if self.text_columns else ""
            lines.append(f"  text{columns}: {self.text!r}")
        if self.filter is not None:
            when = ""
            if self.is_search:
                when = " (after the search)" if self.prefilter is False else \
                    " (before the search)"
            lines.append(f"  where{when}: {self.filter}")
        if self.columns is not None:
            names = [a if isinstance(a, str) else f"{a[0]}={a[1]}" for a in self.columns]
            lines.append(f"  select: {', '.join(names)}")
        if self.skip:
            lines.append(f"  offset: {self.skip}")
        if self.options:
            lines.append("  " + ", ".join(f"{k}={v!r}" for k, v in self.options))
        if self.reranker is not None:
            lines.append(f"  reranked by: {self.reranker!r}")
        return lines

    def __repr__(self) -> str:
        return "\n".join(self._summary())

    def _repr_html_(self) -> str:
        body = self.request_body()
        if self.vector is not None and "vector" in body:
            kind_name, values = self.vector
            body["vector"] = {kind_name: _short_vector(values) if kind_name == "single_vector"
                              else [_short_vector(v) for v in values[:3]]}
        path = routes.TABLE_QUERY.replace("{id}", self.ident)
        request = f"POST {path}\n{json.dumps(body, sort_keys=True)}"
        summary = "\n".join(line.strip() for line in self._summary()[1:])
        return (f"<div><b>nsframe Query</b> {html.escape(self._summary()[0][6:])}"
                f"<pre>{html.escape(summary)}</pre>"
                f"<details><summary>request</summary><pre>{html.escape(request)}</pre>"
                "</details></div>")


def _short_vector(values: Sequence[Any], shown: int = 3) -> str:
    """``[0.1, 0.2, 0.3, …] (384)``: a vector as a person wants to see it in a repr."""
    items = ", ".join(repr(round(float(v), 4)) for v in values[:shown])
    if len(values) <= shown:
        return f"[{items}]"
    return f"[{items}, …] ({len(values)})"


def new_query(client: Client, ident: str, ref: Ref, vector: Any, text: str | None,
              column: str | None, fts_columns: Sequence[str] | None) -> Query:
    """A search as `Table.search` starts it."""
    if isinstance(vector, str):
        vector, text = None, vector if text is None else text
    encoded = None
    if vector is not None:
        encoded = _vector_json(vector)
    if text is not None and not isinstance(text, str):
        raise TypeError("text must be a string.")
    text_columns: tuple[str, ...] | None = tuple(fts_columns) if fts_columns else None
    if vector is None and text is not None and column is not None and text_columns is None:
        text_columns, column = (column,), None
    return Query(client=client, ident=ident, ref=ref, vector=encoded, text=text,
                 text_columns=text_columns, vector_column=column)
