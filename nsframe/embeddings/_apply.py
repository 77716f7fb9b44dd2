"""Where tables meet their embedding functions: vectors filled in on insert, query text
embedded on search. All of it runs in the client; the server never sees a model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nsframe import _frames
from nsframe._upload import Progress, ProgressArg
from nsframe.embeddings.base import (
    EmbeddingError,
    EmbeddingFunction,
    EmbeddingFunctionConfig,
    EmbeddingFunctionNotFoundError,
    UntrustedEmbeddingError,
)
from nsframe.embeddings.registry import EmbeddingSpec, install_hint, read_specs

if TYPE_CHECKING:
    from nsframe._table import Table

DEFAULT_EMBED_BATCH = 512
# Embedding is slow next to sending (about a thousand rows a second on a CPU): a bar from
# this many rows on, when someone watches.
AUTO_PROGRESS_ROWS = 2_000


def table_specs(table: Table) -> list[EmbeddingSpec]:
    """The functions recorded in the table's schema (none for a missing table)."""
    from nsframe.exceptions import NsframeError

    try:
        metadata = table.schema.metadata
    except (NsframeError, ValueError):
        return []
    return read_specs(metadata)


def build(spec: EmbeddingSpec, table_id: str) -> EmbeddingFunctionConfig:
    """``spec``'s function, or an error that names the table, the function and the fix."""
    where = (f"Table {table_id!r} fills {spec.vector_column!r} from {spec.source_column!r} "
             f"with the embedding function {spec.name!r}")
    try:
        return spec.config()
    except EmbeddingFunctionNotFoundError as exc:
        raise EmbeddingFunctionNotFoundError(f"{where}. {exc}") from None
    except UntrustedEmbeddingError as exc:
        raise UntrustedEmbeddingError(f"{where}. {exc}") from None
    except ImportError as exc:
        hint = install_hint(spec.name) or str(exc)
        raise ImportError(f"{where}, which this client cannot run: {hint}") from exc
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{where} and the parameters {spec.model!r}, which this "
                             f"client's {spec.name!r} does not take: {exc}") from exc


def check_batch_size(batch_size: int | None) -> int:
    if batch_size is None:
        return DEFAULT_EMBED_BATCH
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"embed_batch_size must be a positive int, got {batch_size!r}.")
    return batch_size


def fill_vectors(source: _frames.Source, configs: Sequence[EmbeddingSpec | EmbeddingFunctionConfig],
                 table_id: str, *, batch_size: int | None = None,
                 progress: ProgressArg = None) -> _frames.Source:
    """``source`` with each missing vector column computed from its source column.

    A vector column the data already has is kept as it is; a function whose source column
    the data lacks is skipped (an update of other columns). A null source gives a null
    vector. The vectors are all computed before this returns (a stream is read whole).
    """
    size = check_batch_size(batch_size)
    names = source.schema.names
    todo = [c for c in configs
            if c.vector_column not in names and c.source_column in names]
    if not todo:
        return source
    built = [c if isinstance(c, EmbeddingFunctionConfig) else build(c, table_id) for c in todo]
    fields = [pa.field(c.vector_column, pa.list_(pa.float32(), c.function.ndims()))
              for c in built]
    schema = source.schema
    for field in fields:
        schema = schema.append(field)
    shown = progress if progress is None or isinstance(progress, bool) else None
    columns = ", ".join(repr(c.source_column) for c in built)
    meter = Progress(shown, total_rows=source.num_rows, desc=f"embedding {columns}",
                     show_by_default=(source.num_rows or 0) >= AUTO_PROGRESS_ROWS,
                     auto_rows=AUTO_PROGRESS_ROWS)

    # Every vector is computed before the first byte is sent: a request must not wait on a
    # model (the server ends a body that stalls), and a failure leaves nothing written.
    done: list[pa.RecordBatch] = []
    try:
        for batch in source.batches:
            for start in range(0, batch.num_rows, size):
                piece = batch.slice(start, size)
                arrays = list(piece.columns)
                for conf, field in zip(built, fields, strict=True):
                    values = piece.column(piece.schema.get_field_index(conf.source_column))
                    arrays.append(embed_array(conf.function, values, field.type, size))
                meter.update(piece.num_rows, piece.nbytes)  # the bar's MB/s: input read
                done.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    finally:
        meter.close()
    nbytes = sum(b.nbytes for b in done)
    return _frames.Source(schema, iter(done), nbytes=nbytes,
                          num_rows=sum(b.num_rows for b in done))


def embed_array(function: EmbeddingFunction, values: pa.Array, kind: pa.DataType,
                batch_size: int) -> pa.Array:
    """One vector per value (null for a null value), ``batch_size`` values per call."""
    dim = kind.list_size
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    present = values.filter(pc.is_valid(values)) if not valid.all() else values
    out = np.empty((len(present), dim), dtype=np.float32)
    for start in range(0, len(present), batch_size):
        piece = present.slice(start, batch_size).to_pylist()
        vectors = np.asarray(function.compute_source_embeddings(piece), dtype=np.float32)
        if vectors.shape != (len(piece), dim):
            raise EmbeddingError(f"{function!r} returned shape {vectors.shape} for "
                                 f"{len(piece)} values; expected ({len(piece)}, {dim}).")
        out[start:start + len(piece)] = vectors
    flat = pa.array(out.reshape(-1), pa.float32())
    if valid.all():
        return pa.FixedSizeListArray.from_arrays(flat, dim)
    # Rows with a null source: a null vector, the rest in order.
    full = np.zeros((len(values), dim), dtype=np.float32)
    full[valid] = out
    mask = pa.array(~valid)
    return pa.FixedSizeListArray.from_arrays(pa.array(full.reshape(-1), pa.float32()), dim,
                                             mask=mask)


def query_config(table: Table, column: str | None, *,
                 required: bool) -> EmbeddingFunctionConfig | None:
    """The function that embeds a text query for ``table`` (in vector ``column`` if
    named); None when the table has none and ``required`` is False."""
    specs = table_specs(table)
    if column is not None:
        specs = [s for s in specs if s.vector_column == column]
    if not specs:
        if not required:
            return None
        named = f" for vector column {column!r}" if column is not None else ""
        raise EmbeddingError(
            f"Table {table.id!r} has no embedding function{named}, so a text query cannot be "
            "turned into a vector: pass a vector, search with query_type='fts', or create the "
            "table with embedding=... (docs/embeddings.md).")
    if len(specs) > 1:
        raise EmbeddingError(
            f"Table {table.id!r} has embedding functions for the vector columns "
            f"{[s.vector_column for s in specs]}: name one with column=.")
    return build(specs[0], table.id)


def embed_queries(conf: EmbeddingFunctionConfig, texts: Sequence[Any]) -> np.ndarray[Any, Any]:
    """The query vectors of ``texts``, in one call."""
    vectors = np.asarray(conf.function.compute_query_embeddings(list(texts)), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise EmbeddingError(f"{conf.function!r} returned shape {vectors.shape} for "
                             f"{len(texts)} queries.")
    return vectors


def with_metadata(source: _frames.Source, configs: Sequence[EmbeddingFunctionConfig],
                  inherited: Sequence[EmbeddingSpec] = ()) -> _frames.Source:
    """``source`` whose schema records ``configs`` (and the entries ``inherited`` from a
    given schema), so that the table it creates keeps them."""
    import json

    from nsframe.embeddings.registry import METADATA_KEY, get_registry

    entries = [{"name": s.name, "model": s.model, "source_column": s.source_column,
                "vector_column": s.vector_column} for s in inherited]
    entries += [get_registry().function_to_metadata(c) for c in configs]
    metadata = dict(source.schema.metadata or {})
    metadata[METADATA_KEY.encode()] = json.dumps(entries, indent=2).encode("utf-8")
    schema = source.schema.with_metadata(metadata)

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in source.batches:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    return _frames.Source(schema, batches(), nbytes=source.nbytes, num_rows=source.num_rows)


def as_configs(embedding: Any) -> list[EmbeddingFunctionConfig]:
    """``embedding=`` as a list: a config, a function (``text`` -> ``vector``), or a list."""
    if embedding is None:
        return []
    items = embedding if isinstance(embedding, (list, tuple)) else [embedding]
    configs = []
    for item in items:
        if isinstance(item, EmbeddingFunction):
            item = EmbeddingFunctionConfig(item)
        if not isinstance(item, EmbeddingFunctionConfig):
            raise TypeError("embedding= takes an embedding function (made with "
                            "get_registry().get(name).create(...)), an "
                            f"EmbeddingFunctionConfig, or a list of them; got {item!r}.")
        configs.append(item)
    return configs


def create_source(data: Any, schema: pa.Schema | None, configs: list[EmbeddingFunctionConfig],
                  table_id: str, *, batch_size: int | None = None,
                  progress: ProgressArg = None) -> _frames.Source:
    """What `Connection.create_table` sends when the table gets embedding functions: the
    data with its vectors filled in (or an empty table of ``schema``), the schema
    recording the functions, and the vector fields added to a schema that lacks them.

    Functions a given schema records (a LanceDB-made schema, say) are built only when a
    vector must be computed: a reader who cannot run one can still create the table.
    """
    own = {c.vector_column for c in configs}
    inherited = [s for s in read_specs(schema.metadata if schema is not None else None)
                 if s.vector_column not in own]
    todo: list[EmbeddingSpec | EmbeddingFunctionConfig] = [*configs, *inherited]
    if schema is not None:
        for item in todo:
            if item.source_column not in schema.names:
                raise ValueError(f"The schema has no column {item.source_column!r} to embed "
                                 f"into {item.vector_column!r} (columns: {schema.names}).")
            if item.vector_column not in schema.names:
                conf = item if isinstance(item, EmbeddingFunctionConfig) else \
                    build(item, table_id)
                schema = schema.append(pa.field(item.vector_column, pa.list_(
                    pa.float32(), conf.function.ndims())))
    if data is None:
        if schema is None:
            raise ValueError("embedding= needs data or a schema to create the table from.")
        source = _frames.Source(schema, iter(()), nbytes=0, num_rows=0)
    else:
        source = _frames.to_source(data)
        missing = [c.source_column for c in todo if c.source_column not in source.schema.names
                   and c.vector_column not in source.schema.names]
        if missing:
            raise ValueError(f"The data has no column {missing[0]!r} to embed "
                             f"(columns: {source.schema.names}).")
        source = fill_vectors(source, todo, table_id, batch_size=batch_size,
                              progress=progress)
        if schema is not None:
            target = schema
            source = _frames.Source(target, (b.select(target.names).cast(target)
                                             for b in source.batches),
                                    nbytes=source.nbytes, num_rows=source.num_rows)
    return with_metadata(source, configs, inherited)
