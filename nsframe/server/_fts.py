"""The full-text part of a query, turned into Lance's `lance.query` objects.

Lance 14 searches a text column with no FTS index by reading it (flat BM25), for every
query kind except fuzzy matching, which only an index can do: a fuzzy match on an
unindexed column is a 400 that says to build the index. When a query names no column,
it searches the columns that have an FTS index, or every text column when none has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lance.dataset import LanceDataset
from lance.query import (
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    FullTextQuery,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)

from nsframe.exceptions import InvalidInputError
from nsframe.server._fieldpath import resolve, text_fields
from nsframe.server._request import get_dict, get_float, get_int, get_str

QUERY_KINDS = ("match", "phrase", "boost", "multi_match", "boolean")


@dataclass
class TextQuery:
    """The parsed ``full_text_query``: a plain string or a structured tree (raw JSON)."""

    text: str | None = None
    columns: list[str] | None = None
    structured: dict[str, Any] | None = None


def parse_text_query(body: dict[str, Any]) -> TextQuery | None:
    raw = get_dict(body, "full_text_query")
    if not raw:
        return None
    string_q = get_dict(raw, "string_query")
    structured = get_dict(raw, "structured_query")
    if string_q is not None and structured is not None:
        raise InvalidInputError(
            "full_text_query has both string_query and structured_query: send one of them."
        )
    if string_q is None and structured is None and "query" in raw:
        # LanceDB's wire format: {"query": "text", "columns": [...]} or {"query": {...}}.
        if isinstance(raw["query"], dict):
            structured = {"query": raw["query"]}
        else:
            string_q = raw
    if string_q is not None:
        text = get_str(string_q, "query", required=True)
        assert text is not None
        columns = string_q.get("columns")
        if columns is not None and (
            not isinstance(columns, list) or not all(isinstance(c, str) and c for c in columns)
        ):
            raise InvalidInputError(
                "full_text_query.string_query.columns must be an array of column names."
            )
        return TextQuery(text=text, columns=columns or None)
    if structured is not None:
        tree = get_dict(structured, "query")
        if tree is None:
            raise InvalidInputError(
                "full_text_query.structured_query needs 'query': an object with one of "
                + ", ".join(QUERY_KINDS) + "."
            )
        return TextQuery(structured=tree)
    raise InvalidInputError(
        "full_text_query needs string_query ({\"query\": \"...\"}) or structured_query."
    )


def fts_indexed_columns(ds: LanceDataset) -> set[str]:
    return {
        name for d in ds.describe_indices() if "Inverted" in d.type_url for name in d.field_names
    }


class TextQueryBuilder:
    """Builds the `FullTextQuery` for one dataset, checking columns against its schema."""

    def __init__(self, ds: LanceDataset) -> None:
        self._schema: pa.Schema = ds.schema
        self._indexed = fts_indexed_columns(ds)

    def build(self, query: TextQuery) -> FullTextQuery:
        if query.structured is not None:
            return self._node(query.structured, "structured_query.query")
        assert query.text is not None
        columns = self._columns(query.columns, "string_query.columns")
        if len(columns) == 1:
            return MatchQuery(query.text, columns[0])
        return MultiMatchQuery(query.text, columns)

    # ------------------------------------------------------------------ columns
    def _column(self, path: str, where: str) -> str:
        field = resolve(self._schema, path, f"{where} column")
        if not (pa.types.is_string(field.field.type) or pa.types.is_large_string(
            field.field.type
        )):
            raise InvalidInputError(
                f"The {where} column {field.path} is {field.field.type}: full-text search "
                "needs a string column."
            )
        return field.path

    def _columns(self, paths: list[str] | None, where: str) -> list[str]:
        if paths:
            return [self._column(p, where) for p in paths]
        if self._indexed:
            return sorted(self._indexed)
        found = [f.path for f in text_fields(self._schema)]
        if not found:
            raise InvalidInputError("The table has no string column to search for text.")
        return found

    # -------------------------------------------------------------------- nodes
    def _node(self, node: object, where: str) -> FullTextQuery:
        if not isinstance(node, dict) or len(node) != 1 or next(iter(node)) not in QUERY_KINDS:
            raise InvalidInputError(
                f"{where} must be an object with exactly one of {', '.join(QUERY_KINDS)}."
            )
        kind, spec = next(iter(node.items()))
        if not isinstance(spec, dict):
            raise InvalidInputError(f"{where}.{kind} must be a JSON object.")
        handlers: dict[str, Callable[[dict[str, Any], str], FullTextQuery]] = {
            "match": self._match,
            "phrase": self._phrase,
            "boost": self._boost,
            "multi_match": self._multi_match,
            "boolean": self._boolean,
        }
        return handlers[kind](spec, f"{where}.{kind}")

    def _match(self, spec: dict[str, Any], where: str) -> FullTextQuery:
        terms = get_str(spec, "terms", required=True)
        assert terms is not None
        # Missing means exact matching; an explicit null means automatic fuzziness.
        fuzziness = get_int(spec, "fuzziness") if "fuzziness" in spec else 0
        operator = _operator(spec.get("operator"), where)
        options: dict[str, Any] = {
            "boost": _positive(get_float(spec, "boost"), f"{where}.boost", 1.0),
            "max_expansions": _default(get_int(spec, "max_expansions"), 50),
            "operator": operator,
            "prefix_length": _default(get_int(spec, "prefix_length"), 0),
        }
        columns = self._columns([c] if (c := get_str(spec, "column")) else None, where)
        if fuzziness != 0:
            unindexed = [c for c in columns if c not in self._indexed]
            if unindexed:
                raise InvalidInputError(
                    f"{where} asks for fuzzy matching on {', '.join(unindexed)}, which has no "
                    "FTS index; Lance matches fuzzily only through one. Build it with "
                    "create_scalar_index (index_type FTS), or send fuzziness 0."
                )
        queries = [self._match_column(terms, c, fuzziness, options) for c in columns]
        return queries[0] if len(queries) == 1 else _should(queries)

    @staticmethod
    def _match_column(terms: str, column: str, fuzziness: int | None,
                      options: dict[str, Any]) -> FullTextQuery:
        if fuzziness is not None:
            return MatchQuery(terms, column, fuzziness=fuzziness, **options)
        # Automatic fuzziness, by each term's length (Lance 14 ignores fuzziness=None).
        words = terms.split() or [terms]
        per_word = [MatchQuery(w, column, fuzziness=_auto_fuzziness(w), **options)
                    for w in words]
        if len(per_word) == 1:
            return per_word[0]
        occur = Occur.MUST if options["operator"] == FullTextOperator.AND else Occur.SHOULD
        return BooleanQuery([(occur, q) for q in per_word])

    def _phrase(self, spec: dict[str, Any], where: str) -> FullTextQuery:
        terms = get_str(spec, "terms", required=True)
        assert terms is not None
        slop = _default(get_int(spec, "slop"), 0)
        columns = self._columns([c] if (c := get_str(spec, "column")) else None, where)
        queries: list[FullTextQuery] = [PhraseQuery(terms, c, slop=slop) for c in columns]
        return queries[0] if len(queries) == 1 else _should(queries)

    def _boost(self, spec: dict[str, Any], where: str) -> FullTextQuery:
        for member in ("positive", "negative"):
            if spec.get(member) is None:
                raise InvalidInputError(f"{where}.{member} is required: give a query object.")
        negative_boost = get_float(spec, "negative_boost")
        return BoostQuery(
            self._node(spec["positive"], f"{where}.positive"),
            self._node(spec["negative"], f"{where}.negative"),
            negative_boost=0.5 if negative_boost is None else negative_boost,
        )

    def _multi_match(self, spec: dict[str, Any], where: str) -> FullTextQuery:
        matches = spec.get("match_queries")
        if not isinstance(matches, list) or not matches:
            raise InvalidInputError(f"{where}.match_queries must be a non-empty array.")
        for i, m in enumerate(matches):
            if not isinstance(m, dict):
                raise InvalidInputError(f"{where}.match_queries[{i}] must be a match object.")
        same_text = len({(m.get("terms"), str(m.get("operator") or "or").lower())
                         for m in matches}) == 1
        plain = all(m.get("column") and m.get("fuzziness", 0) == 0
                    and not m.get("prefix_length") for m in matches)
        if same_text and plain:
            # Lance's own multi-match: each column scored alone, the best one kept.
            terms = get_str(matches[0], "terms", required=True)
            assert terms is not None
            columns = [self._column(str(m["column"]), f"{where}.match_queries") for m in matches]
            boosts = [_positive(get_float(m, "boost"), f"{where}.boost", 1.0) for m in matches]
            return MultiMatchQuery(terms, columns, boosts=boosts,
                                   operator=_operator(matches[0].get("operator"), where))
        return _should([self._match(m, f"{where}.match_queries[{i}]")
                        for i, m in enumerate(matches)])

    def _boolean(self, spec: dict[str, Any], where: str) -> FullTextQuery:
        clauses: list[tuple[Occur, FullTextQuery]] = []
        for member, occur in (("must", Occur.MUST), ("should", Occur.SHOULD),
                              ("must_not", Occur.MUST_NOT)):
            items = spec.get(member) or []
            if not isinstance(items, list):
                raise InvalidInputError(f"{where}.{member} must be an array of query objects.")
            clauses.extend(
                (occur, self._node(item, f"{where}.{member}[{i}]")) for i, item in enumerate(items)
            )
        if not any(occur != Occur.MUST_NOT for occur, _ in clauses):
            raise InvalidInputError(
                f"{where} needs at least one must or should clause: must_not alone matches "
                "nothing."
            )
        return BooleanQuery(clauses)


def _should(queries: list[FullTextQuery]) -> FullTextQuery:
    return BooleanQuery([(Occur.SHOULD, q) for q in queries])


def _auto_fuzziness(word: str) -> int:
    """Edits allowed for a word: none up to 2 characters, 1 up to 5, else 2."""
    return 0 if len(word) <= 2 else 1 if len(word) <= 5 else 2


def _default(value: int | None, default: int) -> int:
    return default if value is None else value


def _positive(value: float | None, where: str, default: float) -> float:
    if value is None:
        return default
    if value < 0:
        raise InvalidInputError(f"{where} must be >= 0, got {value}.")
    return value


def _operator(value: object, where: str) -> FullTextOperator:
    if value is None:
        return FullTextOperator.OR
    if isinstance(value, str) and value.lower() in ("and", "or"):
        return FullTextOperator.AND if value.lower() == "and" else FullTextOperator.OR
    raise InvalidInputError(f"{where}.operator is {value!r}: use And or Or.")
