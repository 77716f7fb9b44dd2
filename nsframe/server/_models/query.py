"""`POST /v1/table/{id}/query`: every member of a vector, full-text, hybrid or filter query.

docs/query.md describes each member and its default. The checks that need no table run
here, at decoding: bounds, the shape of ``vector``, ``columns`` and ``full_text_query``.
"""

from __future__ import annotations

from nsframe._protocol.defaults import DEFAULT_SEARCH_K
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.expressions import Sql
from nsframe.server._http.fields import Count
from nsframe.server._http.request import whole_condition
from nsframe.server._http.validation import Envelope
from nsframe.server._limits import Limits
from nsframe.server._search.fts import TextQueryBody
from nsframe.server._search.vector import (
    DistanceType,
    Vector,
    VectorBody,
    VectorQuery,
    checked_vector,
)

# LanceDB's wire format allows a bare list of names or a bare {alias: expression} map
# besides upstream's {"column_names": [...]} / {"column_aliases": {...}}.
Columns = dict[str, list[str] | dict[str, Sql] | Sql | None] | list[str] | None


class QueryRequest(Envelope, kw_only=True):
    # Missing: 10 for a search, every matching row for a filter-only scan (0 too).
    k: Count | None = None
    offset: Count | None = None
    filter: Sql | None = None
    prefilter: bool | None = None
    columns: Columns = None
    with_row_id: bool | None = None
    fast_search: bool | None = None
    version: Count | None = None
    branch: str | None = None
    # Vector search; null, {} or empty vectors mean none (upstream clients always send it).
    vector: Vector = None
    vector_column: str | None = None
    distance_type: DistanceType | None = None
    nprobes: Count | None = None
    refine_factor: Count | None = None
    ef: Count | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    bypass_vector_index: bool | None = None
    full_text_query: TextQueryBody | None = None

    def __post_init__(self) -> None:
        # Normalized in place: `vector` is a VectorBody with one non-empty member or None,
        # `full_text_query` None unless it asks for a text search, `filter` None or whole.
        self.vector = checked_vector(self.vector, self.vector_column, self.lower_bound,
                                     self.upper_bound)
        if self.full_text_query is not None and self.full_text_query.empty:
            self.full_text_query = None
        if self.filter is not None:
            # Checked now (a stray ')' is a 400 here); wrapped where it is used.
            self.filter = self.filter if self.filter.strip() else None
            if self.filter is not None:
                whole_condition(self.filter, "filter")
        names_and_aliases(self.columns)

    def check_limits(self, limits: Limits) -> None:
        if self.is_search:
            check_search_depth(self.search_k + self.skip, limits)

    @property
    def condition(self) -> str | None:
        """The filter as Lance must parse it (`whole_condition`), or None."""
        return whole_condition(self.filter, "filter") if self.filter is not None else None

    @property
    def is_search(self) -> bool:
        """A vector, full-text or hybrid search (which ranks), not a filter-only scan."""
        return self.vector is not None or self.full_text_query is not None

    @property
    def search_k(self) -> int:
        return self.k or DEFAULT_SEARCH_K

    @property
    def skip(self) -> int:
        return self.offset or 0

    def projection(self) -> tuple[list[str] | None, dict[str, str] | None]:
        """The field paths to return, or {output name: path or SQL}; neither for all."""
        return names_and_aliases(self.columns)

    def vector_query(self) -> VectorQuery | None:
        vector = self.vector
        if not isinstance(vector, VectorBody):  # None, once __post_init__ has run
            return None
        return VectorQuery(
            single=vector.single_vector,
            multi=vector.multi_vector,
            column=self.vector_column,
            metric=self.distance_type,
            nprobes=self.nprobes,
            refine_factor=self.refine_factor,
            ef=self.ef,
            lower_bound=self.lower_bound,
            upper_bound=self.upper_bound,
            use_index=not self.bypass_vector_index,
        )


def check_search_depth(rows: int, limits: Limits, queries: int = 1) -> None:
    """400 when a search would rank more rows than `Limits.max_k` allows."""
    if rows * queries <= limits.max_k:
        return
    asked = f"k + offset = {rows}" if queries == 1 else \
        f"{queries} query vectors times k + offset = {rows}"
    raise InvalidInputError(
        f"The search asks for {asked} rows; this server ranks at most {limits.max_k} rows "
        "per search (max_k): ask for fewer, or page with a filter. A filter-only query "
        "(no vector, no full_text_query) streams any number of rows."
    )


class ExplainRequest(Envelope, kw_only=True):
    """ExplainTableQueryPlan: a query (as the query operation takes it) and verbosity."""

    query: QueryRequest | None = None
    verbose: bool = False
    branch: str | None = None

    def __post_init__(self) -> None:
        if self.query is None:
            raise InvalidInputError(
                'The member \'query\' is required: give the query to explain, e.g. '
                '{"query": {"filter": "id > 3"}}.'
            )


def names_and_aliases(raw: Columns) -> tuple[list[str] | None, dict[str, str] | None]:
    """``columns`` as a list of field paths or a map {output name: path or SQL}."""
    names: object = None
    aliases: object = None
    if isinstance(raw, list):
        names = raw
    elif raw and not ({"column_names", "column_aliases"} & raw.keys()):
        aliases = raw
    elif raw:
        names, aliases = raw.get("column_names"), raw.get("column_aliases")
    if names is not None and aliases is not None:
        raise InvalidInputError(
            "The member 'columns' has both column_names and column_aliases: send one of them."
        )
    if names is not None:
        if not isinstance(names, list) or not names or not all(names):
            raise InvalidInputError(
                "columns.column_names must be a non-empty array of field paths."
            )
        return list(names), None
    if aliases is not None:
        if not isinstance(aliases, dict) or not aliases or not all(
            isinstance(v, str) and v for v in aliases.values()
        ):
            raise InvalidInputError(
                "columns.column_aliases must map each output name to a field path or SQL "
                "expression (a non-empty string)."
            )
        if not all(aliases):
            raise InvalidInputError("columns.column_aliases has an empty output name.")
        return None, dict(aliases)
    return None, None
