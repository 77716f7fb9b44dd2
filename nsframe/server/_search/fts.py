"""The full-text part of a query, turned into Lance's `lance.query` objects.

Lance 14 searches a text column with no FTS index by reading it (flat BM25), for every
query kind; but a fuzzy match there silently finds nothing, because only an index knows
the words a misspelt term could stand for. So for an unindexed column we expand each
fuzzy term ourselves, against the column's distinct words (its `Vocabulary`, read once
per table version and cached), and hand Lance an exact match on those words. Nothing is
written: a read never creates a table version. When a query names no column, it
searches the columns that have an FTS index, or every text column when none has.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
from nsframe.server._http.request import get_dict, get_float, get_int, get_str
from nsframe.server._search.fieldpath import resolve, text_fields

QUERY_KINDS = ("match", "phrase", "boost", "multi_match", "boolean")
# The most edits a fuzzy match may allow. Lance's FTS index matches through a Levenshtein
# automaton of at most 10,000 states, which at 2 edits holds words of about 45 letters,
# at 3 only about 12 and at 4 about 7 (longer words fail the query). 2 holds for words
# as they come, and is Elasticsearch's bound too; unindexed columns get the same one.
MAX_FUZZINESS = 2


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
        self._ds = ds
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
        if fuzziness is not None and fuzziness > MAX_FUZZINESS:
            raise InvalidInputError(
                f"{where}.fuzziness is {fuzziness}: it must be 0 to {MAX_FUZZINESS} edits "
                "(or null, automatic by word length)."
            )
        operator = _operator(spec.get("operator"), where)
        options: dict[str, Any] = {
            "boost": _positive(get_float(spec, "boost"), f"{where}.boost", 1.0),
            "max_expansions": _default(get_int(spec, "max_expansions"), 50),
            "operator": operator,
            "prefix_length": _default(get_int(spec, "prefix_length"), 0),
        }
        columns = self._columns([c] if (c := get_str(spec, "column")) else None, where)
        queries = [
            self._match_column(terms, c, fuzziness, options)
            if fuzziness == 0 or c in self._indexed
            else self._expanded_match(terms, c, fuzziness, options)
            for c in columns
        ]
        return queries[0] if len(queries) == 1 else _should(queries)

    def _expanded_match(self, terms: str, column: str, fuzziness: int | None,
                        options: dict[str, Any]) -> FullTextQuery:
        """A fuzzy match on a column without an FTS index, as an exact match on the words
        of the column within ``fuzziness`` edits of each query word (Lance's flat search
        cannot match fuzzily). Each word keeps its ``max_expansions`` closest words."""
        words = vocabulary(self._ds, column)
        groups: list[list[str]] = []
        for word in tokenize(terms):
            edits = _auto_fuzziness(word) if fuzziness is None else fuzziness
            groups.append(words.near(word, edits, options["prefix_length"],
                                     options["max_expansions"]) or [word])
        if not groups:
            return MatchQuery(terms, column, boost=options["boost"])

        def exact(alternatives: list[str]) -> MatchQuery:
            return MatchQuery(" ".join(alternatives), column, boost=options["boost"],
                              operator=FullTextOperator.OR)

        if options["operator"] == FullTextOperator.AND and len(groups) > 1:
            return BooleanQuery([(Occur.MUST, exact(g)) for g in groups])
        return exact(list(dict.fromkeys(w for g in groups for w in g)))

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


# ----------------------------------------------------------- fuzzy without an index
# What Lance's flat full-text search counts as a word: a run of letters and digits
# (anything else separates words; case is kept).
_NOT_WORD = r"[^\p{L}\p{N}]+"
# Bounds on the memory fuzzy matching without an index may hold: a column with more
# distinct words than this needs an FTS index, and a few vocabularies are kept.
MAX_VOCABULARY = 1_000_000
VOCABULARY_CACHE_SIZE = 4


def tokenize(text: str) -> list[str]:
    """The words of ``text``, split as Lance's flat search splits a column."""
    return [str(word) for word in _words(pa.array([text])).to_pylist()]


def _words(texts: pa.Array) -> pa.Array:
    """Every word of every string of ``texts``, in order, repeats kept."""
    words = pc.list_flatten(pc.split_pattern_regex(texts, _NOT_WORD))
    return words.filter(pc.not_equal(words, ""))


class Vocabulary:
    """The distinct words of one text column at one table version.

    Words are grouped by length; each group's characters are turned into a matrix of
    code points the first time a query needs that length, so that edit distances to
    a query word are computed for the whole group at once.
    """

    def __init__(self, words: pa.Array) -> None:
        lengths = pc.utf8_length(words)
        self._groups = {
            int(length): words.filter(pc.equal(lengths, length))
            for length in pc.unique(lengths).to_pylist()
        }
        self._codes: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def _matrix(self, length: int) -> np.ndarray:
        with self._lock:
            codes = self._codes.get(length)
            if codes is None:
                group = self._groups[length].to_pylist()
                flat = np.frombuffer("".join(group).encode("utf-32-le"), dtype=np.uint32)
                codes = self._codes[length] = flat.reshape(len(group), length)
            return codes

    def near(self, word: str, edits: int, prefix_length: int = 0,
             limit: int | None = None) -> list[str]:
        """The words within ``edits`` edits of ``word`` that start with its first
        ``prefix_length`` characters: nearest first, ties in alphabetical order, the first
        ``limit`` of them (all without a limit). Only those are decoded to strings."""
        query = np.frombuffer(word.encode("utf-32-le"), dtype=np.uint32)
        prefix = query[:prefix_length]
        width = len(query) + edits
        found: list[np.ndarray] = []
        distances: list[np.ndarray] = []
        for length in sorted(self._groups):
            if abs(length - len(query)) > edits or length < len(prefix):
                continue
            codes = self._matrix(length)
            if len(prefix):
                codes = codes[np.all(codes[:, : len(prefix)] == prefix, axis=1)]
            distance = edit_distances(query, codes, edits)
            within = distance <= edits
            # Padded with code point 0, below any character of a word: a word sorts
            # before the longer ones it begins, as strings do.
            padded = np.zeros((int(within.sum()), width), dtype=np.uint32)
            padded[:, :length] = codes[within]
            found.append(padded)
            distances.append(distance[within])
        if not found:
            return []
        codes, distance = np.concatenate(found), np.concatenate(distances)
        return [codes[row].tobytes().decode("utf-32-le").rstrip("\0")
                for row in _closest(codes, distance, limit)]


def _closest(codes: np.ndarray, distance: np.ndarray, limit: int | None) -> np.ndarray:
    """The rows of the ``limit`` smallest distances, ordered by distance, then by their
    code points (alphabetically), which also decide the ties at the limit."""
    if limit is not None and limit <= 0:
        return np.empty(0, dtype=np.intp)
    rows = np.arange(len(distance))
    if limit is not None and limit < len(distance):
        # Every row nearer than the limit-th distance is kept; those at it compete.
        cut = np.partition(distance, limit - 1)[limit - 1]
        rows = rows[distance <= cut]
    order = np.lexsort([*codes[rows].T[::-1], distance[rows]])
    return rows[order[:limit]]


def edit_distances(query: np.ndarray, words: np.ndarray, limit: int) -> np.ndarray:
    """Levenshtein distance from ``query`` (code points) to each row of ``words`` (an
    n x m matrix of code points), or ``limit + 1`` where it is above ``limit``.

    The dynamic programme runs over the query's characters, one row per word at a time,
    dropping the words whose whole row already exceeds ``limit``.
    """
    n, m = words.shape
    out = np.full(n, limit + 1, dtype=np.int32)
    alive = np.arange(n)
    steps = np.arange(m + 1, dtype=np.int32)
    previous = np.broadcast_to(steps, (n, m + 1)).copy()
    for i, char in enumerate(query, start=1):
        best = np.empty_like(previous)
        best[:, 0] = i
        # Substitute (or keep) a character, or delete one from the query ...
        best[:, 1:] = np.minimum(previous[:, :-1] + (words != char), previous[:, 1:] + 1)
        # ... then insert: cell j is min over k <= j of best[k] + (j - k).
        previous = np.minimum.accumulate(best - steps, axis=1) + steps
        keep = previous.min(axis=1) <= limit
        if not keep.all():
            previous, words, alive = previous[keep], words[keep], alive[keep]
            if not len(alive):
                return out
    out[alive] = np.minimum(previous[:, m], limit + 1)
    return out


class _Build:
    """One reading of a column's words, which concurrent queries on its key wait for.

    It ends with the vocabulary, or the refusal of a column with too many words, or
    neither (the read failed otherwise, and the build is forgotten)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.words: Vocabulary | None = None
        self.refusal: str | None = None


_vocabularies: OrderedDict[tuple[Any, ...], _Build] = OrderedDict()
_vocabularies_lock = threading.Lock()


def vocabulary(ds: LanceDataset, column: str) -> Vocabulary:
    """The distinct words of ``column`` in this version of ``ds``, read once and cached
    (keyed by location, version and commit time, so a branch or a rewrite is new).

    The first query on a key reads the column and the others wait for it. A column with
    too many words is remembered as such: later queries are refused without reading it.
    """
    key = (ds.uri, ds.version, ds.get_version()["timestamp"], column)
    while True:
        with _vocabularies_lock:
            build = _vocabularies.get(key)
            reader = build is None
            if build is None:
                build = _vocabularies[key] = _Build()
                while len(_vocabularies) > VOCABULARY_CACHE_SIZE:
                    _vocabularies.popitem(last=False)
            else:
                _vocabularies.move_to_end(key)
        if reader:
            _read(build, key, ds, column)
        build.done.wait()
        if build.words is not None:
            return build.words
        if build.refusal is not None:
            raise InvalidInputError(build.refusal)
        # The reader failed and forgot the build: read again (or wait for who does).


def _read(build: _Build, key: tuple[Any, ...], ds: LanceDataset, column: str) -> None:
    """Read the words of ``build``; a failure other than too many words is raised to
    the reader alone, and forgotten so that the next query reads again."""
    try:
        build.words = Vocabulary(_distinct_words(ds, column))
    except InvalidInputError as refusal:  # only _check_size raises it
        build.refusal = refusal.detail
    except BaseException:
        with _vocabularies_lock:
            if _vocabularies.get(key) is build:
                del _vocabularies[key]
        raise
    finally:
        build.done.set()


def _distinct_words(ds: LanceDataset, column: str) -> pa.Array:
    parts: list[pa.Array] = []
    pending = 0
    for batch in ds.scanner(columns=[column]).to_batches():
        words = pc.unique(_words(batch.column(0)))
        parts.append(words)
        pending += len(words)
        if pending > MAX_VOCABULARY:
            parts = [pc.unique(pa.concat_arrays(parts))]
            pending = len(parts[0])
            _check_size(pending, column)
    merged = pc.unique(pa.concat_arrays(parts)) if parts else pa.array([], pa.string())
    _check_size(len(merged), column)
    return merged


def _check_size(size: int, column: str) -> None:
    if size > MAX_VOCABULARY:
        raise InvalidInputError(
            f"Column {column} has more than {MAX_VOCABULARY:,} distinct words, too many to "
            "match fuzzily without an index: build one with create_scalar_index "
            "(index_type FTS), or send fuzziness 0."
        )
