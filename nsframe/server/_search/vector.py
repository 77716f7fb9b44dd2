"""The vector part of a query: query vectors, the column, the metric and search knobs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.request import get_bool, get_float, get_int, get_str
from nsframe.server._search.fieldpath import ResolvedField, resolve, vector_fields, vector_kind

# Every spelling the upstream reference accepts, mapped to Lance's metric names.
DISTANCE_TYPES = {
    "l2": "l2",
    "euclidean": "l2",
    "cosine": "cosine",
    "dot": "dot",
    "inner_product": "dot",
    "hamming": "hamming",
}


def parse_distance_type(value: object, member: str = "distance_type") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in DISTANCE_TYPES:
        raise InvalidInputError(
            f"The member {member!r} is {value!r}: use one of l2, euclidean, cosine, dot, "
            "inner_product or hamming (any case)."
        )
    return DISTANCE_TYPES[value.lower()]


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


def _numbers(value: object, where: str) -> list[float]:
    if not isinstance(value, list) or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in value
    ):
        raise InvalidInputError(f"{where} must be an array of numbers.")
    if not all(math.isfinite(x) for x in value):
        raise InvalidInputError(f"{where} holds NaN or infinity: send finite numbers.")
    return [float(x) for x in value]


def parse_vector_query(body: dict[str, Any]) -> VectorQuery | None:
    """The vector search the body asks for, or None (a null or empty ``vector``)."""
    raw = body.get("vector")
    column = get_str(body, "vector_column")
    if column is not None and column == "":
        raise InvalidInputError(
            "The member 'vector_column' is empty: name the vector column, or leave it out "
            "to use the table's only vector column."
        )
    single: list[float] | None = None
    multi: list[list[float]] | None = None
    # LanceDB's own wire format sends a bare array; accept it as a convenience.
    if isinstance(raw, list):
        raw = {"multi_vector": raw} if raw and isinstance(raw[0], list) else {"single_vector": raw}
    if raw is not None and not isinstance(raw, dict):
        raise InvalidInputError(
            "The member 'vector' must be an object with single_vector or multi_vector."
        )
    if raw:
        has_single = raw.get("single_vector") not in (None, [])
        has_multi = raw.get("multi_vector") not in (None, [])
        if has_single and has_multi:
            raise InvalidInputError(
                "The member 'vector' has both single_vector and multi_vector: send one of them."
            )
        if has_single:
            single = _numbers(raw["single_vector"], "vector.single_vector")
        elif has_multi:
            rows = raw["multi_vector"]
            if not isinstance(rows, list):
                raise InvalidInputError("vector.multi_vector must be an array of arrays.")
            multi = [_numbers(r, f"vector.multi_vector[{i}]") for i, r in enumerate(rows)]
            if any(not r for r in multi):
                raise InvalidInputError("vector.multi_vector holds an empty vector.")
    bounds = get_float(body, "lower_bound"), get_float(body, "upper_bound")
    if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
        raise InvalidInputError(
            f"lower_bound {bounds[0]} is above upper_bound {bounds[1]}: swap them."
        )
    query = VectorQuery(
        single=single,
        multi=multi,
        column=column,
        metric=parse_distance_type(body.get("distance_type")),
        nprobes=get_int(body, "nprobes"),
        refine_factor=get_int(body, "refine_factor"),
        ef=get_int(body, "ef"),
        lower_bound=bounds[0],
        upper_bound=bounds[1],
        use_index=not (get_bool(body, "bypass_vector_index") or False),
    )
    if single is None and multi is None:
        return None
    return query


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
