"""Rerankers: how the results of a search are re-ordered, or a hybrid search's vector and
full-text results fused, in the client (LanceDB's ``lancedb.rerankers`` names).

Use one with ``Query.rerank``::

    tbl.search("a question", query_type="hybrid").rerank(LinearCombinationReranker(0.7))

Without ``rerank()`` a hybrid search is fused by the server with reciprocal rank fusion,
the same ranking as ``rerank(RRFReranker())``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from nsframe._protocol.defaults import DEFAULT_SEARCH_K

if TYPE_CHECKING:
    from nsframe._query import Query

__all__ = ["CrossEncoderReranker", "LinearCombinationReranker", "RRFReranker", "Reranker"]

RELEVANCE = "_relevance_score"
ROW_ID = "_rowid"


class Reranker:
    """Base class: override `rerank_hybrid` (and, to re-order a single search,
    `rerank_vector` / `rerank_fts`). Each returns the rows sorted best first, with a
    ``_relevance_score`` column (higher is better)."""

    #: A column the reranker reads (added to the query's selected columns if missing).
    column: str | None = None

    def rerank_hybrid(self, query: str | None, vector_results: pa.Table,
                      fts_results: pa.Table) -> pa.Table:
        raise NotImplementedError(f"{type(self).__name__} does not fuse hybrid results.")

    def rerank_vector(self, query: str | None, vector_results: pa.Table) -> pa.Table:
        return self.rerank_hybrid(query, vector_results, vector_results.slice(0, 0)
                                  .drop_columns(["_distance"]).append_column(
                                      "_score", pa.array([], pa.float32())))

    def rerank_fts(self, query: str | None, fts_results: pa.Table) -> pa.Table:
        return self.rerank_hybrid(query, fts_results.slice(0, 0).drop_columns(["_score"])
                                  .append_column("_distance", pa.array([], pa.float32())),
                                  fts_results)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({shown})"


def _union(vector_results: pa.Table, fts_results: pa.Table) -> tuple[list[dict[str, Any]],
                                                                      pa.Schema]:
    """Rows of both (once each, by row id, vector side first), with both scores."""
    rows: dict[Any, dict[str, Any]] = {}
    for row in vector_results.to_pylist():
        rows[row[ROW_ID]] = {**row, "_score": None}
    for row in fts_results.to_pylist():
        if row[ROW_ID] in rows:
            rows[row[ROW_ID]]["_score"] = row["_score"]
        else:
            rows[row[ROW_ID]] = {**row, "_distance": None}
    schema = pa.unify_schemas([vector_results.schema, fts_results.schema],
                              promote_options="permissive")
    return list(rows.values()), schema


def _ranked(rows: list[dict[str, Any]], schema: pa.Schema, scores: Sequence[float]) -> pa.Table:
    for row, score in zip(rows, scores, strict=True):
        row[RELEVANCE] = float(score)
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i][ROW_ID]))
    full = schema.append(pa.field(RELEVANCE, pa.float32())) if RELEVANCE not in schema.names \
        else schema
    return pa.Table.from_pylist([rows[i] for i in order], schema=full)


class RRFReranker(Reranker):
    """Reciprocal rank fusion: each row scores the sum of ``1 / (K + rank)`` over the
    lists it is in (rank from 1), as the server's hybrid search does."""

    def __init__(self, K: int = 60) -> None:  # K: LanceDB's spelling
        if K <= 0:
            raise ValueError(f"K must be > 0, got {K!r}.")
        self.K = K

    def rerank_hybrid(self, query: str | None, vector_results: pa.Table,
                      fts_results: pa.Table) -> pa.Table:
        rows, schema = _union(vector_results, fts_results)
        score: dict[Any, float] = {}
        for table in (vector_results, fts_results):
            for rank, row_id in enumerate(table.column(ROW_ID).to_pylist()):
                score[row_id] = score.get(row_id, 0.0) + 1.0 / (self.K + rank + 1)
        return _ranked(rows, schema, [score[r[ROW_ID]] for r in rows])


def _spread(values: Sequence[float | None], *, lower_is_better: bool) -> list[float]:
    """Scores scaled to [0, 1] over the candidates, 1 the best; a missing one is 0."""
    known = [v for v in values if v is not None]
    if not known:
        return [0.0] * len(values)
    low, high = min(known), max(known)
    out = []
    for value in values:
        if value is None:
            out.append(0.0)
        elif high == low:
            out.append(1.0)
        else:
            scaled = (value - low) / (high - low)
            out.append(1.0 - scaled if lower_is_better else scaled)
    return out


class LinearCombinationReranker(Reranker):
    """``weight * vector_similarity + (1 - weight) * text_score``, each first scaled to
    [0, 1] over the candidates (distance: nearest 1; BM25: best 1); a row found by one
    search only scores 0 on the other."""

    def __init__(self, weight: float = 0.7) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be between 0 and 1, got {weight!r}.")
        self.weight = weight

    def rerank_hybrid(self, query: str | None, vector_results: pa.Table,
                      fts_results: pa.Table) -> pa.Table:
        rows, schema = _union(vector_results, fts_results)
        near = _spread([r["_distance"] for r in rows], lower_is_better=True)
        text = _spread([r["_score"] for r in rows], lower_is_better=False)
        return _ranked(rows, schema, [self.weight * v + (1 - self.weight) * t
                                      for v, t in zip(near, text, strict=True)])


class CrossEncoderReranker(Reranker):
    """Scores each (query, row text) pair with a cross-encoder and sorts by that score.

    ``score``: a callable ``(query, texts) -> scores`` (higher is better), e.g. a
    sentence-transformers ``CrossEncoder(...).predict`` wrapped by you. Or
    ``model_name``: a cross-encoder folder you allowed with
    ``nsframe.embeddings.allow_model`` (nothing is downloaded). ``column``: the text
    column read (added to the selected columns for the scoring).
    """

    def __init__(self, model_name: str | None = None, column: str = "text", *,
                 score: Callable[[str, list[str]], Sequence[float]] | None = None,
                 device: str = "cpu") -> None:
        if (model_name is None) == (score is None):
            raise ValueError("CrossEncoderReranker needs score= (a callable) or model_name= "
                             "(an allowed local cross-encoder), exactly one.")
        self.model_name = model_name
        self.column = column
        self.device = device
        self._score = score

    def _scorer(self) -> Callable[[str, list[str]], Sequence[float]]:
        if self._score is not None:
            return self._score
        import importlib

        from nsframe.embeddings import UntrustedEmbeddingError, allowed_models

        folder = allowed_models().get(str(self.model_name))
        if folder is None:
            raise UntrustedEmbeddingError(
                f"Cross-encoder {self.model_name!r} is not a model you allowed: call "
                f"nsframe.embeddings.allow_model({self.model_name!r}, folder) first.")
        library = importlib.import_module("sentence_transformers")
        model = library.CrossEncoder(folder, device=self.device, local_files_only=True)

        def predict(query: str, texts: list[str]) -> Sequence[float]:
            return [float(s) for s in model.predict([(query, t) for t in texts])]

        self._score = predict
        return predict

    def rerank_hybrid(self, query: str | None, vector_results: pa.Table,
                      fts_results: pa.Table) -> pa.Table:
        if not query:
            raise ValueError("A cross-encoder reads the query text: search with a string, "
                             "or pass rerank(reranker, query_string=...).")
        rows, schema = _union(vector_results, fts_results)
        column = self.column or "text"
        if rows and column not in rows[0]:
            raise ValueError(f"The results have no column {self.column!r} for the "
                             "cross-encoder to read: pass column=.")
        texts = ["" if r[column] is None else str(r[column]) for r in rows]
        scores = [float(s) for s in self._scorer()(query, texts)] if rows else []
        if len(scores) != len(rows):
            raise ValueError(f"The cross-encoder gave {len(scores)} scores for {len(rows)} "
                             "texts.")
        return _ranked(rows, schema, scores)


def run(query: Query) -> pa.Table:
    """Run ``query`` (which has a reranker): its searches apart, then the reranker."""
    reranker = query.reranker
    k = query.k if query.k is not None else DEFAULT_SEARCH_K
    depth = k + (query.skip or 0)
    options = dict(query.options)
    columns = query.columns
    added: list[str] = []
    if columns is not None and columns and isinstance(columns[0], str):
        for name in (reranker.column,):
            if name is not None and name not in columns:
                added.append(name)
        columns = tuple(columns) + tuple(added)
    base = replace(query, reranker=None, k=depth, skip=None, columns=columns)
    base = base._option("with_row_id", True)
    text = query.query_text if query.query_text is not None else query.text
    if query.vector is not None and query.text is not None:
        by_vector = replace(base, text=None, text_columns=None).to_arrow()
        by_text = replace(base, vector=None, vector_column=None,
                          options=tuple((k_, v) for k_, v in base.options
                                        if k_ == "with_row_id")).to_arrow()
        result = reranker.rerank_hybrid(text, by_vector, by_text)
    elif query.vector is not None:
        result = reranker.rerank_vector(text, base.to_arrow())
    elif query.text is not None:
        result = reranker.rerank_fts(text, base.to_arrow())
    else:
        raise ValueError("rerank() re-orders a search: give a vector or a text to search.")
    result = result.slice(query.skip or 0, k)
    drop = [c for c in added if c in result.column_names]
    if not options.get("with_row_id") and ROW_ID in result.column_names:
        drop.append(ROW_ID)
    return result.drop_columns(drop) if drop else result
