"""Vector columns: equal-length lists of numbers, stored as ``fixed_size_list<float32>``.

Lance searches (and indexes) only fixed-size lists, so frames' vectors, which arrive as
numpy arrays in an object column, python lists or polars ``List``/``Array``, are made
into that type before anything is sent. A column that cannot be one is a ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from nsframe._encode import uniform_lengths


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_fixed_size_list(t))


def check_named(named: Mapping[str, int] | None) -> dict[str, int]:
    if named is None:
        return {}
    if not isinstance(named, Mapping):
        raise TypeError("vector_columns must be a dict of {column: dimension}, "
                        f"such as {{'emb': 384}}; got {named!r}.")
    for name, dim in named.items():
        if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
            raise ValueError(f"vector_columns[{name!r}] must be a dimension > 0, got {dim!r}.")
    return {str(k): int(v) for k, v in named.items()}


class VectorPlan:
    """Which columns become vectors, decided on the first data seen and kept after.

    ``named`` columns must convert; with ``auto``, float-list columns whose lists all
    have one length (in the first table or batch) are vectors too.
    """

    def __init__(self, named: Mapping[str, int] | None, *, auto: bool) -> None:
        self._named = check_named(named)
        self._auto = auto
        self._decided: dict[str, int] | None = None

    def _decide(self, data: pa.Table | pa.RecordBatch) -> dict[str, int]:
        if self._decided is None:
            missing = [n for n in self._named if n not in data.schema.names]
            if missing:
                raise ValueError(
                    f"vector_columns names {missing}, not columns of the data "
                    f"(columns: {data.schema.names})."
                )
            decided = dict(self._named)
            if self._auto:
                for field in data.schema:
                    if field.name not in decided:
                        dim = _uniform_float_lists(data.column(field.name))
                        if dim is not None:
                            decided[field.name] = dim
            self._decided = decided
        return self._decided

    def apply_table(self, table: pa.Table) -> pa.Table:
        for name, dim in self._decide(table).items():
            index = table.schema.get_field_index(name)
            column = to_vector(table.column(name), name, dim)
            table = table.set_column(index, table.schema.field(name).with_type(column.type),
                                     column)
        return table

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not self._decide(batch):
            return batch
        if not batch.num_rows:
            return pa.RecordBatch.from_pylist([], schema=self.apply_schema(batch.schema))
        return self.apply_table(pa.Table.from_batches([batch])).to_batches()[0]

    def apply_schema(self, schema: pa.Schema) -> pa.Schema:
        decided = self._decided if self._decided is not None else self._named
        for name, dim in decided.items():
            if name not in schema.names:
                raise ValueError(f"vector_columns names {name!r}, not a column of the data.")
            index = schema.get_field_index(name)
            schema = schema.set(index, schema.field(name).with_type(vector_type(dim)))
        return schema


def vector_type(dim: int) -> pa.DataType:
    return pa.list_(pa.float32(), dim)


def _uniform_float_lists(column: Any) -> int | None:
    """The common length of a float-list column's lists, or None if it is not one."""
    t = column.type
    if not _is_list(t) or not pa.types.is_floating(t.value_type):
        return None
    if pa.types.is_fixed_size_list(t):
        return int(t.list_size) if t.list_size > 0 else None
    bounds = pc.min_max(pc.list_value_length(column)).as_py()
    low, high = bounds["min"], bounds["max"]
    return int(low) if low is not None and low == high and low > 0 else None


def to_vector(column: Any, name: str, dim: int) -> Any:
    """``column`` (Array or ChunkedArray of lists) as ``fixed_size_list<float32>[dim]``.

    Null vectors stay null. Raises ValueError for anything else than lists of ``dim``
    numbers: other types, other lengths, nulls or NaN inside a vector.
    """
    t = column.type
    if not _is_list(t):
        raise ValueError(f"Column {name!r} is {t}, not lists of numbers: it cannot be a "
                         "vector column.")
    if not (pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)):
        raise ValueError(f"Column {name!r} holds lists of {t.value_type}, not numbers: it "
                         "cannot be a vector column.")
    if pa.types.is_fixed_size_list(t):
        if t.list_size != dim:
            raise ValueError(f"Column {name!r} holds vectors of {t.list_size} numbers, "
                             f"not {dim}.")
    else:
        lengths = pc.list_value_length(column)
        wrong = pc.and_kleene(pc.is_valid(lengths), pc.not_equal(lengths, dim))
        if pc.any(wrong).as_py():
            row = pc.index(wrong, True).as_py()
            raise ValueError(
                f"Column {name!r} row {row} has {lengths[row].as_py()} numbers, not {dim}: a "
                "vector column needs lists of one length (pass vector_columns={} to keep "
                "ragged lists as lists)."
            )
    values = pc.list_flatten(column)
    if values.null_count:
        # pandas turns NaN in lists into nulls, so a null here may have been a NaN.
        raise ValueError(f"Column {name!r} has a missing number (null or NaN) inside a "
                         "vector: make the whole vector null, or fill the missing numbers.")
    if pa.types.is_floating(t.value_type) and _has_nan(values):
        raise ValueError(f"Column {name!r} has NaN inside a vector: vector search cannot rank "
                         "NaN; drop or fill those rows (or make the vector null).")
    return column.cast(vector_type(dim))


def _has_nan(values: Any) -> bool:
    # A sum is NaN only when a value is, or when +inf and -inf both occur; it costs half
    # of is_nan's pass (no boolean array), so the exact check runs only when it is NaN.
    # (Arrow has no sum of float16: those few go straight to the exact check.)
    if not pa.types.is_float16(values.type):
        total = pc.sum(values).as_py()
        if total is None or total == total:
            return False
    return bool(pc.any(pc.is_nan(values)).as_py())


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def object_vector_width(series: Any, name: str, dim: int | None) -> int | None:
    """The vector length of a pandas object column of 1-D numeric numpy arrays, or None
    when it is not one (then the Arrow-level rules apply). All lengths are checked
    here, in one cheap pass, so a ragged column fails before anything is sent.
    ``dim`` set means the user named the column.
    """
    import numpy as np

    values = series.to_numpy(dtype=object)
    first = next((v for v in values if not _missing(v)), None)
    if not isinstance(first, np.ndarray) or first.ndim != 1 or first.dtype.kind not in "fiu" \
            or len(first) == 0:
        return None
    width = len(first)
    if dim is not None and width != dim:
        raise ValueError(f"Column {name!r} holds vectors of {width} numbers, not {dim}.")
    if uniform_lengths(values, width):  # the usual case, without a Python call per row
        return width
    for row, value in enumerate(values):
        if not _missing(value) and (not hasattr(value, "__len__") or len(value) != width):
            if dim is None:
                return None
            raise ValueError(f"Column {name!r} row {row} is not {width} numbers: a vector "
                             "column needs arrays of one length.")
    return width


def object_vectors(values: Any, name: str, width: int) -> pa.Array:
    """Object-dtype numpy ``values`` (arrays of ``width`` numbers, or missing) as a vector
    array, converted by pyarrow in one pass; NaN inside a vector is a ValueError."""
    import pandas as pd

    missing = pd.isna(values)
    if missing.any():
        # None or NaN for a whole row is a null vector, as pandas means it.
        values = values.copy()
        values[missing] = None
    try:
        vectors = pa.array(values, type=vector_type(width))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise ValueError(f"Column {name!r} holds a row that is not {width} numbers: it cannot "
                         f"be a vector column ({exc}).") from exc
    return to_vector(vectors, name, width)
