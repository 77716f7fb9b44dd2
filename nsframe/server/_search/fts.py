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

import functools
import threading
from collections import OrderedDict
from typing import Annotated, Any

import msgspec
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
from msgspec import UNSET, UnsetType

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import Count, shown
from nsframe.server._search.fieldpath import resolve, text_fields

QUERY_KINDS = ("match", "phrase", "boost", "multi_match", "boolean")
# The most edits a fuzzy match may allow. Lance's FTS index matches through a Levenshtein
# automaton of at most 10,000 states, which at 2 edits holds words of about 45 letters,
# at 3 only about 12 and at 4 about 7 (longer words fail the query). 2 holds for words
# as they come, and is Elasticsearch's bound too; unindexed columns get the same one.
MAX_FUZZINESS = 2


ColumnName = Annotated[str, msgspec.Meta(min_length=1)]
Boost = Annotated[float, msgspec.Meta(ge=0)]


class Operator(str):
    """How a match combines its terms: ``And`` or ``Or`` (any case); holds ``and``/``or``."""

    @classmethod
    def describe(cls) -> str:
        return "And or Or"

    @classmethod
    def from_wire(cls, value: object) -> Operator:
        if isinstance(value, str) and value.lower() in ("and", "or"):
            return cls(value.lower())
        raise ValueError(f"must be {cls.describe()}, got {shown(value)}")


class MatchNode(msgspec.Struct, kw_only=True):
    terms: str
    column: str | None = None
    # Missing means exact matching; an explicit null means automatic fuzziness.
    fuzziness: Count | UnsetType | None = UNSET
    operator: Operator | None = None
    boost: Boost | None = None
    max_expansions: Count | None = None
    prefix_length: Count | None = None


class PhraseNode(msgspec.Struct, kw_only=True):
    terms: str
    column: str | None = None
    slop: Count | None = None


class BoostNode(msgspec.Struct, kw_only=True):
    positive: Node
    negative: Node
    negative_boost: float | None = None


class MultiMatchNode(msgspec.Struct, kw_only=True):
    match_queries: Annotated[list[MatchNode], msgspec.Meta(min_length=1)]


class BooleanNode(msgspec.Struct, kw_only=True):
    must: list[Node] | None = None
    should: list[Node] | None = None
    must_not: list[Node] | None = None


class Node(msgspec.Struct, kw_only=True):
    """One query of a structured tree: an object with exactly one of ``QUERY_KINDS``."""

    match: MatchNode | None = None
    phrase: PhraseNode | None = None
    boost: BoostNode | None = None
    multi_match: MultiMatchNode | None = None
    boolean: BooleanNode | None = None

    def __post_init__(self) -> None:
        if sum(getattr(self, kind) is not None for kind in QUERY_KINDS) != 1:
            raise ValueError(f"must be an object with exactly one of {', '.join(QUERY_KINDS)}")


class StringQuery(msgspec.Struct, kw_only=True):
    query: str
    columns: list[ColumnName] | None = None


class StructuredQuery(msgspec.Struct, kw_only=True):
    query: Node


class TextQueryBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The query's ``full_text_query``: a plain string, or a structured tree.

    LanceDB's own wire format, ``{"query": "text", "columns": [...]}`` or
    ``{"query": {...}}``, is accepted too and turned into the first two. ``{}`` asks for
    no text search; any other member is refused, so that a misspelt ``string_query``
    is a 400 rather than a query that silently searches no text.
    """

    string_query: StringQuery | None = None
    structured_query: StructuredQuery | None = None
    query: str | Node | None = None
    columns: list[ColumnName] | None = None

    def __post_init__(self) -> None:
        if self.string_query is not None and self.structured_query is not None:
            raise ValueError("has both string_query and structured_query: send one of them")
        if self.string_query is None and self.structured_query is None:
            if isinstance(self.query, str):
                self.string_query = StringQuery(query=self.query, columns=self.columns)
            elif self.query is not None:
                self.structured_query = StructuredQuery(query=self.query)
            elif self.columns is not None:
                raise ValueError(
                    'needs string_query ({"query": "..."}) or structured_query'
                )

    @property
    def empty(self) -> bool:
        """True for ``{}``: no text search (as upstream clients may send)."""
        return self.string_query is None and self.structured_query is None


def fts_indexed_columns(ds: LanceDataset) -> set[str]:
    return {
        name for d in ds.describe_indices() if "Inverted" in d.type_url for name in d.field_names
    }


class TextQueryBuilder:
    """Builds the `FullTextQuery` for one dataset, checking columns against its schema."""

    def __init__(self, ds: LanceDataset, schema: pa.Schema) -> None:
        self._ds = ds
        self._schema = schema  # ds's (the caller has it: `Catalog.schema`)

    @functools.cached_property
    def _indexed(self) -> set[str]:
        # Read only for a search that names no column: listing the indexes costs more
        # than the rest of a small search's Python.
        return fts_indexed_columns(self._ds)

    def build(self, query: TextQueryBody) -> FullTextQuery:
        if query.structured_query is not None:
            return self._node(query.structured_query.query, "structured_query.query")
        assert query.string_query is not None
        text = query.string_query.query
        columns = self._columns(query.string_query.columns, "string_query.columns")
        if len(columns) == 1:
            return MatchQuery(text, columns[0])
        return MultiMatchQuery(text, columns)

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
    def _node(self, node: Node, where: str) -> FullTextQuery:
        if node.match is not None:
            return self._match(node.match, f"{where}.match")
        if node.phrase is not None:
            return self._phrase(node.phrase, f"{where}.phrase")
        if node.boost is not None:
            return self._boost(node.boost, f"{where}.boost")
        if node.multi_match is not None:
            return self._multi_match(node.multi_match, f"{where}.multi_match")
        assert node.boolean is not None  # a Node has exactly one kind (its __post_init__)
        return self._boolean(node.boolean, f"{where}.boolean")

    def _match(self, spec: MatchNode, where: str) -> FullTextQuery:
        fuzziness = 0 if spec.fuzziness is UNSET else spec.fuzziness
        if fuzziness is not None and fuzziness > MAX_FUZZINESS:
            raise InvalidInputError(
                f"{where}.fuzziness is {fuzziness}: it must be 0 to {MAX_FUZZINESS} edits "
                "(or null, automatic by word length)."
            )
        options: dict[str, Any] = {
            "boost": 1.0 if spec.boost is None else spec.boost,
            "max_expansions": _default(spec.max_expansions, 50),
            "operator": _operator(spec.operator),
            "prefix_length": _default(spec.prefix_length, 0),
        }
        columns = self._columns([spec.column] if spec.column else None, where)
        queries = [
            self._match_column(spec.terms, c, fuzziness, options)
            if fuzziness == 0 or c in self._indexed
            else self._expanded_match(spec.terms, c, fuzziness, options)
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

    def _phrase(self, spec: PhraseNode, where: str) -> FullTextQuery:
        slop = _default(spec.slop, 0)
        columns = self._columns([spec.column] if spec.column else None, where)
        queries: list[FullTextQuery] = [PhraseQuery(spec.terms, c, slop=slop) for c in columns]
        return queries[0] if len(queries) == 1 else _should(queries)

    def _boost(self, spec: BoostNode, where: str) -> FullTextQuery:
        return BoostQuery(
            self._node(spec.positive, f"{where}.positive"),
            self._node(spec.negative, f"{where}.negative"),
            negative_boost=0.5 if spec.negative_boost is None else spec.negative_boost,
        )

    def _multi_match(self, spec: MultiMatchNode, where: str) -> FullTextQuery:
        matches = spec.match_queries
        same_text = len({(m.terms, m.operator or "or") for m in matches}) == 1
        plain = all(m.column and m.fuzziness in (UNSET, 0) and not m.prefix_length
                    for m in matches)
        if same_text and plain:
            # Lance's own multi-match: each column scored alone, the best one kept.
            columns = [self._column(str(m.column), f"{where}.match_queries") for m in matches]
            boosts = [1.0 if m.boost is None else m.boost for m in matches]
            return MultiMatchQuery(matches[0].terms, columns, boosts=boosts,
                                   operator=_operator(matches[0].operator))
        return _should([self._match(m, f"{where}.match_queries[{i}]")
                        for i, m in enumerate(matches)])

    def _boolean(self, spec: BooleanNode, where: str) -> FullTextQuery:
        clauses: list[tuple[Occur, FullTextQuery]] = []
        for member, occur in (("must", Occur.MUST), ("should", Occur.SHOULD),
                              ("must_not", Occur.MUST_NOT)):
            items: list[Node] = getattr(spec, member) or []
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


def _operator(value: Operator | None) -> FullTextOperator:
    return FullTextOperator.AND if value == "and" else FullTextOperator.OR


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
