"""The only module that knows pandas and polars: frames in, Arrow out, and back.

In: anything with ``__arrow_c_stream__``, pyarrow tables/batches/readers, pandas and
polars frames (lazy ones streamed), a list of dicts, a dict of columns, or an iterable
of any of those, as a `Source`: a schema and a stream of record batches.
Out: Arrow results as pandas (nullable dtypes by default) or polars frames.

pandas and polars are imported lazily, so `import nsframe` stays light and a missing
polars only matters to whoever asks for a polars frame.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from nsframe._protocol.ipc import PieceSink
from nsframe._protocol.keys import keyed_batches, keyed_schema
from nsframe._vectors import (
    VectorPlan,
    check_named,
    object_vector_width,
    object_vectors,
    vector_type,
)

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

# Rows per record batch when a frame is streamed to the server (PERFORMANCE_NOTES.md).
STREAM_BATCH_ROWS = 8192
# Rows per batch pulled from a polars LazyFrame's streaming engine.
LAZY_BATCH_ROWS = 16_384
PANDAS_BACKENDS = ("numpy_nullable", "pyarrow", "numpy")
# Categories of a pandas categorical kept in the metadata, up to this many.
MAX_STORED_CATEGORIES = 10_000
# Rows of a pandas frame with vector columns are converted this many bytes at a time.
PANDAS_SLICE_BYTES = 4 << 20
# Smaller tables are converted on the calling thread: handing ten rows' columns to
# pyarrow's thread pool costs more (about 35 us of 180) than it saves (bench_frames.py).
THREADED_FROM_ROWS = 65_536
# A flat column in chunks of fewer rows than this (on average) is combined before it
# becomes pandas (`_combined`).
COMBINE_BELOW_ROWS = 1024


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


def frame_kind(data: Any) -> str | None:
    """``"pandas"``, ``"polars"``, ``"polars-lazy"``, or None for anything else.

    Looks only at modules already imported: a frame's library is always loaded.
    """
    pd_mod, pl_mod = sys.modules.get("pandas"), sys.modules.get("polars")
    if pd_mod is not None and isinstance(data, pd_mod.DataFrame):
        return "pandas"
    if pl_mod is not None and isinstance(data, pl_mod.DataFrame):
        return "polars"
    if pl_mod is not None and isinstance(data, pl_mod.LazyFrame):
        return "polars-lazy"
    return None


# ---------------------------------------------------------------------- Arrow -> frames
def to_pandas(table: pa.Table, *, dtype_backend: str | None = "numpy_nullable") -> pd.DataFrame:
    """An Arrow table as a pandas DataFrame.

    The pandas metadata a frame was stored with (pyarrow's ``pandas`` schema metadata)
    restores its dtypes and index. Columns it does not describe follow
    ``dtype_backend``: ``"numpy_nullable"`` (default: ``Int64``, ``boolean``, ``Float64``
    where numpy would lose nulls), ``"pyarrow"`` (``ArrowDtype`` for every column) or
    ``"numpy"`` (pyarrow's plain conversion; ``None`` means the same).
    """
    pd = _pandas()
    backend = "numpy" if dtype_backend is None else dtype_backend
    if backend not in PANDAS_BACKENDS:
        raise ValueError(
            f"dtype_backend must be one of {', '.join(PANDAS_BACKENDS)}; got {dtype_backend!r}."
        )
    schema = table.schema
    plan = _plan(pd, (schema.metadata or {}).get(b"pandas"), tuple(schema.names),
                 tuple(schema.types), backend)
    if plan.dictionaries:
        table = unique_dictionaries(table)
    if backend != "pyarrow":
        table = _combined(table, plan.nested)
    if plan.metadata is not None:
        table = table.replace_schema_metadata(plan.metadata)
    # One pyarrow call converts every column (`_plan` says how).
    frame = table.to_pandas(types_mapper=plan.mapper,
                            use_threads=table.num_rows >= THREADED_FROM_ROWS)
    for name in plan.arrow_typed:
        if name in frame.columns:  # not an index level
            frame[name] = pd.arrays.ArrowExtensionArray(table.column(name))
    for categories in plan.categoricals:
        if _already_restored(table, categories):
            continue
        # By position: a lookup by name would build the column index's hash table.
        column = frame.iloc[:, categories.position]
        if isinstance(column.dtype, pd.CategoricalDtype):
            restored = _restore_categories(column, categories)
            if restored is not None:
                frame.isetitem(categories.position, restored)
    return frame


@dataclass(frozen=True)
class _Categories:
    """What the metadata says of a categorical column that Lance does not keep."""

    position: int  # of the column in the frame
    field: int  # of the column in the table
    stored: pd.Index | None  # the frame's categories (`_mark_arrow_dtypes`), in order
    ordered: bool
    # The stored categories as the column's dictionary, if a column with this dictionary
    # comes out of pyarrow with exactly ``stored`` as its categories.
    dictionary: pa.Array | None


def _already_restored(table: pa.Table, want: _Categories) -> bool:
    """Whether pyarrow's conversion of the column gives what `_restore_categories` would
    make of it, seen on the Arrow side: no pandas column to look up (the common case)."""
    column = table.column(want.field)
    if want.ordered and not column.type.ordered:
        return False
    if want.stored is None:
        return True
    return want.dictionary is not None and column.num_chunks > 0 \
        and all(chunk.dictionary.equals(want.dictionary) for chunk in column.chunks)


@dataclass(frozen=True)
class _PandasPlan:
    """How `to_pandas` converts tables of one schema, worked out once per schema."""

    # Schema metadata to convert with instead of the table's own, or None to keep it.
    metadata: dict[bytes, bytes] | None
    # The ``types_mapper`` of the one ``to_pandas`` call.
    mapper: Any
    # Columns stored as ArrowDtype, rebuilt after the call (pyarrow cannot).
    arrow_typed: tuple[str, ...]
    # Columns that may come out categorical, and what to restore of them.
    categoricals: tuple[_Categories, ...]
    # Whether any column is dictionary-encoded (else `unique_dictionaries` has no work).
    dictionaries: bool
    # Positions of the columns of nested types (lists, vectors, structs).
    nested: frozenset[int]


def _combined(table: pa.Table, nested: frozenset[int]) -> pa.Table:
    """``table`` with the columns that convert faster as one chunk made one chunk.

    Measured (1M flat rows; vectors at 100k): flat columns in pieces of 1,024 rows or
    more convert faster as they are (8k rows: 8.6 ms, 13.6 ms combined first; 256 rows:
    24.6 ms, 19.4 ms combined); vectors convert faster combined (30 ms against 45 ms).
    """
    for index, column in enumerate(table.columns):
        chunks = column.num_chunks
        if chunks > 1 and (index in nested or len(column) < chunks * COMBINE_BELOW_ROWS):
            table = table.set_column(index, table.schema.field(index), column.combine_chunks())
    return table


@functools.lru_cache(maxsize=256)
def _plan(pd: Any, raw: bytes | None, names: tuple[str, ...], types: tuple[pa.DataType, ...],
          backend: str) -> _PandasPlan:
    """The conversion plan for a schema: its names, types and raw pandas metadata.

    Parsing the metadata and deciding each column's dtype cost more than converting a
    small result, so the plan is cached; each part depends only on the arguments.
    """
    meta = _parse_pandas_metadata(raw)
    entries = [c for c in meta.get("columns") or [] if isinstance(c, dict)]
    present = set(names)
    arrow_typed = {str(c.get("field_name")) for c in entries
                   if str(c.get("numpy_type", "")).endswith("[pyarrow]")} & present
    # Only dictionary columns come out categorical (pandas has no other way from Arrow).
    encoded = {name for name, type_ in zip(names, types, strict=True)
               if pa.types.is_dictionary(type_)}
    # The frame's columns are the table's less the index levels, in the same order.
    levels = {c for c in meta.get("index_columns") or [] if isinstance(c, str)}
    frame_columns = [name for name in names if name not in levels]
    if len(meta.get("column_indexes") or []) > 1:  # tuples as labels: none is a field name
        frame_columns = []
    categoricals = tuple(
        _categories(pd, c, frame_columns.index(c["field_name"]), names.index(c["field_name"]),
                    types[names.index(c["field_name"])]) for c in entries
        # Only a column whose label is its field name was restored by name, and only a
        # label that names one column can be found by name.
        if c.get("field_name") in encoded and c.get("name") == c["field_name"]
        and frame_columns.count(c["field_name"]) == 1)
    if arrow_typed:
        # pyarrow cannot rebuild ArrowDtype columns from the metadata: do it ourselves.
        entries = [dict(c, numpy_type="object") if c.get("field_name") in arrow_typed else c
                   for c in entries]
    nullable = _nullable_types(pd)
    mapper = None
    if backend == "pyarrow":
        mapper = pd.ArrowDtype
    elif backend == "numpy_nullable":
        described = {str(c.get("field_name")) for c in entries} & present
        if not described:
            mapper = nullable.get
        else:
            # The metadata's dtypes win for the columns it describes; the others get
            # their nullable dtype from an entry of their own, as if the frame had had it
            # (prepended: pyarrow counts index entries from the end).
            added = [{"name": name, "field_name": name, "pandas_type": "",
                      "numpy_type": str(nullable[type_]), "metadata": None}
                     for name, type_ in zip(names, types, strict=True)
                     if name not in described and type_ in nullable]
            entries = added + entries
    changed = entries != meta.get("columns")
    metadata = {b"pandas": json.dumps({**meta, "columns": entries}).encode()} \
        if changed and meta else None
    if backend == "pyarrow":  # every column is an ArrowDtype already
        arrow_typed, categoricals = set(), ()
    return _PandasPlan(metadata=metadata, mapper=mapper, arrow_typed=tuple(sorted(arrow_typed)),
                       categoricals=categoricals, dictionaries=bool(encoded),
                       nested=frozenset(i for i, t in enumerate(types) if pa.types.is_nested(t)))


def unique_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column's chunks sharing one duplicate-free dictionary.

    Lance may answer a scan over fragments written with different dictionaries (a pandas
    categorical, then a polars one) as one chunk whose dictionary repeats values
    (``['a', 'b', 'c', 'c', 'a']``); pandas refuses such categories. Only dictionary
    columns are touched, and only when they need it.
    """
    for index, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type):
            continue
        column = table.column(index)
        chunks = column.chunks
        if len(chunks) <= 1 and all(_dictionary_is_unique(c) for c in chunks):
            continue
        merged = pa.chunked_array([_dedupe_dictionary(c) for c in chunks], field.type)
        table = table.set_column(index, field, merged.unify_dictionaries())
    return table


def _dictionary_is_unique(chunk: pa.DictionaryArray) -> bool:
    dictionary = chunk.dictionary
    return len(dictionary) < 2 or len(dictionary.unique()) == len(dictionary)


def _dedupe_dictionary(chunk: pa.DictionaryArray) -> pa.DictionaryArray:
    if _dictionary_is_unique(chunk):
        return chunk
    import pyarrow.compute as pc

    values = chunk.dictionary.unique()  # first appearance order
    position = pc.index_in(chunk.dictionary, value_set=values).cast(chunk.indices.type)
    return pa.DictionaryArray.from_arrays(pc.take(position, chunk.indices), values,
                                          ordered=chunk.type.ordered)


def _categories(pd: Any, entry: dict[str, Any], position: int, field: int,
                type_: pa.DictionaryType) -> _Categories:
    stored = entry.get("nsframe_categories")
    index = dictionary = None
    if isinstance(stored, list):
        try:
            index = pd.Index(stored)
        except (TypeError, ValueError):  # not categories pandas can have: leave them
            index = None
    if index is not None:
        try:
            dictionary = pa.array(stored, type_.value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            dictionary = None
    if dictionary is not None:
        # What pyarrow makes of this dictionary must be the stored categories exactly.
        empty = pa.DictionaryArray.from_arrays(pa.array([], type_.index_type), dictionary)
        made = empty.to_pandas().cat.categories
        if index is None or not (made.dtype == index.dtype and made.equals(index)):
            dictionary = None
    return _Categories(position, field, index,
                       bool((entry.get("metadata") or {}).get("ordered")), dictionary)


def _restore_categories(column: pd.Series, want: _Categories) -> pd.Series | None:
    """``column`` with the categories and order it was stored with; None if it has them."""
    categories, changed = column.cat.categories, False
    stored = want.stored
    if stored is not None and not (categories.dtype == stored.dtype and categories.equals(stored)) \
            and set(categories) <= set(stored):
        column, changed = column.cat.set_categories(stored), True
    if want.ordered and not column.cat.ordered:
        # Lance keeps dictionaries but not their "ordered" flag; the metadata has it.
        column, changed = column.cat.as_ordered(), True
    return column if changed else None


def _pandas_metadata(schema: pa.Schema) -> dict[str, Any]:
    return _parse_pandas_metadata((schema.metadata or {}).get(b"pandas"))


def _parse_pandas_metadata(raw: bytes | None) -> dict[str, Any]:
    try:
        meta = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


@functools.cache
def _nullable_types(pd: Any) -> dict[pa.DataType, Any]:
    """Arrow types whose pandas dtype under ``numpy_nullable`` is a masked one."""
    return {
        pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
        pa.bool_(): pd.BooleanDtype(), pa.float32(): pd.Float32Dtype(),
        pa.float64(): pd.Float64Dtype(),
    }


def _nullable_mapper(pd: Any) -> Any:
    """The ``types_mapper`` for ``numpy_nullable``."""
    return _nullable_types(pd).get


def to_polars(table: pa.Table) -> pl.DataFrame:
    """An Arrow table as a polars DataFrame (zero-copy where polars allows).

    polars types come back from the Arrow types and field metadata it wrote
    (``Categorical``, ``Enum``, ``Array``, ...).
    """
    frame: pl.DataFrame = _polars().from_arrow(unique_dictionaries(table))
    return frame


def like(frame: Any, table: pa.Table) -> Any:
    """``table`` as the same kind of frame as ``frame`` (pandas, polars, or LazyFrame)."""
    kind = frame_kind(frame)
    if kind == "pandas":
        return to_pandas(table)
    if kind == "polars":
        return to_polars(table)
    if kind == "polars-lazy":
        return to_polars(table).lazy()
    return table


# ---------------------------------------------------------------------- frames -> Arrow
@dataclass
class Source:
    """Tabular input as a schema and a one-shot stream of record batches.

    ``nbytes`` and ``num_rows`` are known for in-memory input and None for streams.
    """

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    nbytes: int | None = None
    num_rows: int | None = None

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.batches)

    def with_key(self, primary_key: str | Sequence[str] | None, label: str) -> Source:
        """This source with its primary key declared in the schema (`_protocol.keys`):
        ``primary_key``, else the one its schema already declares, if any."""
        schema = keyed_schema(self.schema, primary_key, label)
        if schema is self.schema:
            return self
        return Source(schema, keyed_batches(self.batches, schema), nbytes=self.nbytes,
                      num_rows=self.num_rows)


def to_source(data: Any, *, vector_columns: Mapping[str, int] | None = None) -> Source:
    """Anything tabular as a `Source`, vector columns made ``fixed_size_list<float32>``.

    ``vector_columns=None`` finds vectors (equal-length float lists) by itself in frames,
    rows and columns; Arrow input keeps its types unless columns are named. A dict names
    the vector columns and their dimensions (``{}``: none).

    Raises:
        ValueError: a named (or found) vector column cannot be a vector.
        TypeError: ``data`` is not tabular.
    """
    auto = vector_columns is None
    check_named(vector_columns)  # before any work: a bad dimension is the first error
    kind = frame_kind(data)
    if kind == "polars-lazy":
        return _stream_source(_lazy_batches(data), VectorPlan(vector_columns, auto=auto))
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        return _table_source(table, VectorPlan(vector_columns, auto=False))
    if isinstance(data, pa.RecordBatchReader):
        return _stream_source(data, VectorPlan(vector_columns, auto=False))
    if kind == "pandas":
        return _pandas_source(data, vector_columns)
    if kind is not None or isinstance(data, Mapping) or _is_rows(data):
        return _table_source(_eager_table(data, kind),
                             VectorPlan(vector_columns, auto=auto))
    if hasattr(data, "__arrow_c_stream__"):
        return _stream_source(pa.RecordBatchReader.from_stream(data),
                              VectorPlan(vector_columns, auto=auto))
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        return _stream_source(_iterable_batches(data, vector_columns),
                              VectorPlan(vector_columns, auto=auto))
    raise TypeError(
        f"Cannot turn a {type(data).__name__} into Arrow data: pass a pandas or polars "
        "DataFrame (or LazyFrame), a pyarrow Table or RecordBatchReader, anything with "
        "__arrow_c_stream__, a list of dicts, a dict of columns, or an iterable of those."
    )


def _is_rows(data: Any) -> bool:
    return isinstance(data, Sequence) and not isinstance(data, (str, bytes)) \
        and all(isinstance(row, Mapping) for row in data)


def _eager_table(data: Any, kind: str | None) -> pa.Table:
    if kind == "polars":
        return _polars_to_arrow(data)
    if isinstance(data, Mapping):
        return pa.table({str(k): _column(v) for k, v in data.items()})
    return pa.Table.from_pylist(list(data))


def _column(values: Any) -> Any:
    # A 2-D numpy array as a column is one vector per row.
    if getattr(values, "ndim", 1) == 2:
        np = sys.modules["numpy"]
        matrix = np.ascontiguousarray(values)
        return pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1])
    return values


def _pandas_source(df: pd.DataFrame, vector_columns: Mapping[str, int] | None) -> Source:
    """A pandas frame as batches. Vector columns (numpy arrays in object columns) are
    converted slice by slice as the batches are sent, so the client never holds a second
    copy of them; the other columns are converted at once (mostly zero-copy)."""
    if not df.columns.is_unique:
        raise ValueError("The DataFrame has duplicate column names: rename them first.")
    widths: dict[str, int] = {}
    for name in df.columns:
        if df[name].dtype == object and (vector_columns is None or str(name) in vector_columns):
            dim = None if vector_columns is None else vector_columns[str(name)]
            width = object_vector_width(df[name], str(name), dim)
            if width is not None:
                widths[str(name)] = width
    others = {k: v for k, v in (vector_columns or {}).items() if k not in widths}
    plan = VectorPlan(None if vector_columns is None else others, auto=vector_columns is None)
    rest = df.drop(columns=[n for n in df.columns if str(n) in widths]) if widths else df
    base = plan.apply_table(_mark_arrow_dtypes(
        pa.Table.from_pandas(rest, preserve_index=keeps_index(df.index)), df))
    fields = list(base.schema)
    for position, name in enumerate(df.columns):
        if str(name) in widths:
            fields.insert(position, pa.field(str(name), vector_type(widths[str(name)])))
    schema = pa.schema(fields, metadata=base.schema.metadata)
    rows = len(df)
    if not widths:
        return Source(schema, iter(base.to_batches()), nbytes=base.nbytes, num_rows=rows)
    row_bytes = 4 * sum(widths.values()) + base.nbytes // max(rows, 1)
    step = max(1, PANDAS_SLICE_BYTES // max(row_bytes, 1))
    columns = {str(n): df[n].to_numpy(dtype=object) for n in df.columns if str(n) in widths}

    def batches() -> Iterator[pa.RecordBatch]:
        for start in range(0, rows, step):
            part = base.slice(start, step)
            arrays = [object_vectors(columns[f.name][start:start + step], f.name,
                                     widths[f.name]) if f.name in widths
                      else part.column(f.name).combine_chunks() for f in schema]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    return Source(schema, batches(), nbytes=base.nbytes + rows * 4 * sum(widths.values()),
                  num_rows=rows)


def _mark_arrow_dtypes(table: pa.Table, df: pd.DataFrame) -> pa.Table:
    """Add to pyarrow's pandas metadata what it leaves out: the dtype of ArrowDtype
    columns (decimals are recorded as "object") and the categories of categoricals
    (Arrow keeps them with the data, so an empty or all-null column loses them)."""
    pd = _pandas()
    meta = _pandas_metadata(table.schema)
    if not meta:
        return table
    changed = False
    entries = []
    for entry in meta.get("columns") or []:
        name = entry.get("name")
        dtype = df[name].dtype if name in df.columns and entry.get("field_name") == str(name) \
            else None
        if isinstance(dtype, pd.ArrowDtype):
            entry, changed = dict(entry, numpy_type=str(dtype)), True
        elif isinstance(dtype, pd.CategoricalDtype) \
                and len(dtype.categories) <= MAX_STORED_CATEGORIES \
                and dtype.categories.dtype.kind in "OUiu":
            entry = dict(entry, nsframe_categories=dtype.categories.tolist())
            changed = True
        entries.append(entry)
    if not changed:
        return table
    return table.replace_schema_metadata({
        **(table.schema.metadata or {}),
        b"pandas": json.dumps({**meta, "columns": entries}).encode(),
    })


def keeps_index(index: pd.Index) -> bool:
    """Whether a pandas index is data to store: every index except an unnamed integer one.

    An unnamed RangeIndex (or the integer index left by filtering) only numbers rows,
    so it is dropped and a read gives a fresh RangeIndex. A named index, a MultiIndex
    or an index of other values (dates, strings) is stored as columns and restored.
    """
    if any(name is not None for name in index.names):
        return True
    return not (index.nlevels == 1 and index.dtype.kind in "iu")


def _polars_arrow_compat() -> Any:
    # Plain large_string/large_binary rather than the view types: every Arrow reader
    # (and Lance) understands them.
    return _polars().CompatLevel.oldest()


def _polars_to_arrow(df: pl.DataFrame) -> pa.Table:
    table: pa.Table = df.to_arrow(compat_level=_polars_arrow_compat())
    return table


def _lazy_batches(lf: pl.LazyFrame) -> Iterator[pa.RecordBatch]:
    # The streaming engine hands out frames of about LAZY_BATCH_ROWS rows; the whole
    # result is never collected.
    compat = _polars_arrow_compat()
    produced = False
    for frame in lf.collect_batches(chunk_size=LAZY_BATCH_ROWS, lazy=True):
        produced = True
        yield from frame.to_arrow(compat_level=compat).to_batches()
    if not produced:
        # An empty result still has a schema: create the table with it.
        empty = lf.limit(0).collect().to_arrow(compat_level=compat)
        yield pa.RecordBatch.from_pylist([], schema=empty.schema)


def _iterable_batches(items: Iterable[Any],
                      vector_columns: Mapping[str, int] | None) -> Iterator[pa.RecordBatch]:
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        source = to_source(item, vector_columns=vector_columns or {})
        yield from source.batches


def _table_source(table: pa.Table, plan: VectorPlan) -> Source:
    table = plan.apply_table(table)
    return Source(table.schema, iter(table.to_batches()), nbytes=table.nbytes,
                  num_rows=table.num_rows)


def _stream_source(batches: Iterable[pa.RecordBatch], plan: VectorPlan) -> Source:
    iterator = iter(batches)
    schema = batches.schema if isinstance(batches, pa.RecordBatchReader) else None
    first = next(iterator, None)
    if first is None:
        if schema is None:
            raise ValueError("The data has no batches, hence no schema: nothing to write.")
        return Source(plan.apply_schema(schema), iter(()), nbytes=0, num_rows=0)
    first = plan.apply(first)
    target = first.schema

    def rest() -> Iterator[pa.RecordBatch]:
        yield first
        for batch in iterator:
            batch = plan.apply(batch)
            if not batch.schema.equals(target):
                batch = _cast_batch(batch, target)
            yield batch

    return Source(target, rest())


def _cast_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    try:
        if set(batch.schema.names) != set(schema.names):
            raise KeyError(f"columns {batch.schema.names} instead of {schema.names}")
        table = pa.Table.from_batches([batch]).select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
        raise ValueError(
            f"A later batch of the data does not match the first one's schema ({exc}): "
            "give every batch the same columns and types."
        ) from exc
    if not table.num_rows:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return table.combine_chunks().to_batches()[0]


# ---------------------------------------------------------------------- compatibility
def to_reader(data: Any, schema: pa.Schema | None = None) -> pa.RecordBatchReader:
    """Anything `to_source` accepts as a record batch reader, cast to ``schema`` if given."""
    reader = to_source(data).reader()
    if schema is not None and not reader.schema.equals(schema):
        reader = reader.cast(schema)
    return reader


def to_table(data: Any, schema: pa.Schema | None = None) -> pa.Table:
    """Anything `to_source` accepts as one Arrow table."""
    table = to_reader(data, schema).read_all()
    return table


def ipc_stream_chunks(reader: Iterable[pa.RecordBatch], schema: pa.Schema | None = None,
                      counter: list[int] | None = None) -> Iterator[bytes]:
    """Encode batches as one Arrow IPC stream, piece by piece, never all at once.

    ``counter`` (a one-item list), when given, is increased by the bytes produced.
    Empty pieces are never yielded: in chunked transfer encoding they end the body.
    """
    if schema is None:
        if not isinstance(reader, pa.RecordBatchReader):
            raise TypeError("ipc_stream_chunks needs a schema for a plain iterable of batches.")
        schema = reader.schema
    # Each batch goes out from its own memory (`PieceSink`), not via a BytesIO.
    sink = PieceSink()
    writer = pa.ipc.new_stream(sink, schema)

    def drain() -> Iterator[bytes]:
        for piece in sink.drain_pieces():
            if counter is not None:
                counter[0] += len(piece)
            yield cast(bytes, piece)  # bytes or a memoryview: sockets send either

    for batch in reader:
        for offset in range(0, batch.num_rows, STREAM_BATCH_ROWS):
            writer.write_batch(batch.slice(offset, STREAM_BATCH_ROWS))
            yield from drain()
    writer.close()
    yield from drain()


def batched(values: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``values`` in slices of ``size``."""
    iterator = iter(values)
    while piece := list(itertools.islice(iterator, size)):
        yield piece
