"""The only module that knows pandas and polars: frames in, Arrow out, and back.

pandas and polars are imported lazily, so `import nsframe` stays light and a missing
polars only matters to whoever asks for a polars frame.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

# Rows per record batch when a frame is streamed to the server (PERFORMANCE_NOTES.md).
STREAM_BATCH_ROWS = 8192


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is a core dependency
        raise ImportError("pandas is required for this: pip install pandas") from exc
    return pandas


def _polars() -> Any:
    try:
        import polars
    except ImportError as exc:
        raise ImportError("polars is required for this: pip install 'nsframe[polars]'") from exc
    return polars


def to_pandas(table: pa.Table, *, dtype_backend: str | None = "numpy_nullable") -> pd.DataFrame:
    """An Arrow table as a pandas DataFrame.

    ``dtype_backend="numpy_nullable"`` (the default) keeps integer columns with nulls as
    ``Int64`` rather than float; ``"pyarrow"`` gives ArrowDtype columns; ``None`` is
    pyarrow's plain conversion.
    """
    pd = _pandas()
    if dtype_backend != "pyarrow" and any(c.num_chunks > 1 for c in table.columns):
        # Converting one contiguous chunk per column is about 3x faster than many pieces.
        table = table.combine_chunks()
    if dtype_backend is None:
        return table.to_pandas()
    if dtype_backend == "pyarrow":
        return table.to_pandas(types_mapper=pd.ArrowDtype)
    if dtype_backend == "numpy_nullable":
        mapping = {
            pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
            pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
            pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
            pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
            pa.bool_(): pd.BooleanDtype(), pa.float32(): pd.Float32Dtype(),
            pa.float64(): pd.Float64Dtype(),
        }
        return table.to_pandas(types_mapper=mapping.get)
    raise ValueError(
        f"dtype_backend must be 'numpy_nullable', 'pyarrow' or None, got {dtype_backend!r}."
    )


def to_polars(table: pa.Table) -> pl.DataFrame:
    """An Arrow table as a polars DataFrame (zero-copy where polars allows)."""
    frame: pl.DataFrame = _polars().from_arrow(table)
    return frame


def to_reader(data: Any, schema: pa.Schema | None = None) -> pa.RecordBatchReader:
    """Anything tabular as a stream of record batches.

    Accepts a pyarrow Table, RecordBatch or RecordBatchReader, any object with
    ``__arrow_c_stream__`` (polars, DuckDB, ...), a pandas DataFrame, a list of dicts
    (rows) or a dict of columns. ``schema`` casts the data when given.
    """
    if isinstance(data, pa.RecordBatchReader):
        reader = data
    elif isinstance(data, pa.Table):
        reader = pa.RecordBatchReader.from_batches(
            data.schema, data.to_batches(max_chunksize=STREAM_BATCH_ROWS))
    elif isinstance(data, pa.RecordBatch):
        reader = pa.RecordBatchReader.from_batches(data.schema, [data])
    else:
        return to_reader(to_table(data, schema), schema)
    if schema is not None and not reader.schema.equals(schema):
        reader = reader.cast(schema)
    return reader


def to_table(data: Any, schema: pa.Schema | None = None) -> pa.Table:
    """Anything `to_reader` accepts, as one Arrow table."""
    if isinstance(data, pa.Table):
        return data if schema is None else data.cast(schema)
    if isinstance(data, (pa.RecordBatch, pa.RecordBatchReader)):
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) \
            else data.read_all()
        return table if schema is None else table.cast(schema)
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__"):
        table = pa.table(data)
        return table if schema is None else table.cast(schema)
    if isinstance(data, Mapping):
        return pa.table(dict(data), schema=schema)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        if not all(isinstance(row, Mapping) for row in data):
            raise TypeError("A list of rows must hold dicts, one per row.")
        return pa.Table.from_pylist(list(data), schema=schema)
    raise TypeError(
        f"Cannot turn a {type(data).__name__} into Arrow data: pass a pyarrow Table or "
        "RecordBatchReader, a pandas or polars DataFrame, a list of dicts or a dict of columns."
    )


def ipc_stream_chunks(reader: pa.RecordBatchReader) -> Iterator[bytes]:
    """Encode ``reader`` as an Arrow IPC stream, one chunk per batch, never all at once.

    Empty chunks are never yielded: in chunked transfer encoding they end the body.
    """
    sink = io.BytesIO()
    writer = pa.ipc.new_stream(sink, reader.schema)

    def drain() -> bytes:
        chunk = sink.getvalue()
        sink.seek(0)
        sink.truncate()
        return chunk

    for batch in reader:
        for offset in range(0, batch.num_rows, STREAM_BATCH_ROWS):
            writer.write_batch(batch.slice(offset, STREAM_BATCH_ROWS))
            chunk = drain()
            if chunk:
                yield chunk
    writer.close()
    chunk = drain()
    if chunk:
        yield chunk
