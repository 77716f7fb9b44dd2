"""The vector part of a query: query vectors, the column, the metric and search knobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from nsframe._protocol.defaults import DISTANCE_TYPES
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import shown
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_fields, vector_kind


class DistanceType(str):
    """A metric in any of its spellings, any case; holds Lance's name for it."""

    @classmethod
    def describe(cls) -> str:
        *first, last = DISTANCE_TYPES
        return f"one of {', '.join(first)} or {last} (any case)"

    @classmethod
    def from_wire(cls, value: object) -> DistanceType:
        if not isinstance(value, str) or value.lower() not in DISTANCE_TYPES:
            raise ValueError(f"must be {cls.describe()}, got {shown(value)}")
        return cls(DISTANCE_TYPES[value.lower()])


class VectorBody(msgspec.Struct, kw_only=True):
    """The query's ``vector`` member: one query vector, or several (a batch on a vector
    column, one late-interaction query on a multivector column)."""

    single_vector: list[float] | None = None
    multi_vector: list[list[float]] | None = None


# What ``vector`` may be on the wire: LanceDB's own clients send a bare array (of numbers,
# or of arrays of numbers); upstream's send null or an empty object for "no vector".
Vector = VectorBody | list[float | list[float]] | None


def checked_vector(vector: Vector, column: str | None, lower_bound: float | None,
                   upper_bound: float | None) -> VectorBody | None:
    """``vector`` as an object with exactly one non-empty member, or None for no vector
    search; the other vector members checked with it. msgspec has checked the numbers
    (JSON has no NaN, and it refuses what does not fit a float)."""
    if column is not None and column == "":
        raise InvalidInputError(
            "The member 'vector_column' is empty: name the vector column, or leave it out "
            "to use the table's only vector column."
        )
    if lower_bound is not None and upper_bound is not None and lower_bound > upper_bound:
        raise InvalidInputError(
            f"lower_bound {lower_bound} is above upper_bound {upper_bound}: swap them."
        )
    if isinstance(vector, list):
        vector = _bare(vector)
    if vector is None:
        return None
    single, multi = vector.single_vector or None, vector.multi_vector or None
    if single is not None and multi is not None:
        raise InvalidInputError(
            "The member 'vector' has both single_vector and multi_vector: send one of them."
        )
    if multi is not None and not all(multi):
        raise InvalidInputError("vector.multi_vector holds an empty vector.")
    if single is None and multi is None:
        return None
    return VectorBody(single_vector=single, multi_vector=multi)


def _bare(vector: list[float | list[float]]) -> VectorBody:
    if vector and isinstance(vector[0], list):
        rows = [row for row in vector if isinstance(row, list)]
        if len(rows) < len(vector):
            raise InvalidInputError("vector.multi_vector must be an array of arrays.")
        return VectorBody(multi_vector=rows)
    numbers = [x for x in vector if isinstance(x, float)]
    if len(numbers) < len(vector):
        raise InvalidInputError("vector.single_vector must be an array of numbers.")
    return VectorBody(single_vector=numbers)


@dataclass
class VectorQuery:
    """What the body asks of a vector search (before the table is known)."""

    single: list[float] | None
    multi: list[list[float]] | None
    column: str | None
    metric: str | None
    nprobes: int | None
    refine_factor: int | None
    ef: int | None
    lower_bound: float | None
    upper_bound: float | None
    use_index: bool


def vector_column(schema: pa.Schema, path: str | None) -> ResolvedField:
    """The column to search: the one named, else the table's only vector column."""
    if path is not None:
        found = resolve(schema, path, "vector_column")
        if vector_kind(found.field.type) is None:
            raise InvalidInputError(
                f"The vector_column {found.path} is {found.field.type}, not a vector: name a "
                "fixed-size list column (or a list of them, for multivectors)."
            )
        return found
    candidates = vector_fields(schema)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise InvalidInputError(
            "The table has no vector column, so a vector search cannot run: drop 'vector' "
            "or add a fixed-size list column."
        )
    names = ", ".join(c.path for c in candidates)
    raise InvalidInputError(
        f"The table has several vector columns ({names}): choose one with 'vector_column'."
    )


def nearest_options(query: VectorQuery, field: ResolvedField, k: int) -> dict[str, Any]:
    """Lance's ``nearest`` dict for one query vector or a batch of them."""
    t = field.field.type
    kind = vector_kind(t)
    dim = t.list_size if kind == "vector" else t.value_type.list_size
    value_type = t.value_type if kind == "vector" else t.value_type.value_type
    dtype = np.dtype(value_type.to_pandas_dtype())
    rows = [query.single] if query.single is not None else query.multi or []
    for i, row in enumerate(rows):
        if len(row) != dim:
            where = "single_vector" if query.single is not None else f"multi_vector[{i}]"
            raise InvalidInputError(
                f"vector.{where} has {len(row)} numbers but column {field.path} holds "
                f"{dim}-dimensional vectors."
            )
    q: Any
    if query.single is not None:
        q = np.asarray(query.single, dtype=dtype)
    else:
        q = np.asarray(query.multi, dtype=dtype)
    options: dict[str, Any] = {
        "column": field.path,
        "q": q,
        "k": k,
        "use_index": query.use_index,
    }
    if query.metric is not None:
        options["metric"] = query.metric
    # 0 means "Lance's default" for these knobs: Lance itself wants them >= 1.
    if query.nprobes:
        options["nprobes"] = query.nprobes
    if query.refine_factor:
        options["refine_factor"] = query.refine_factor
    if query.ef:
        options["ef"] = query.ef
    if query.lower_bound is not None or query.upper_bound is not None:
        options["distance_range"] = (query.lower_bound, query.upper_bound)
    return options
