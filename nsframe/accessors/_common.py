"""The methods behind ``df.ns`` (pandas, polars) and ``lf.ns`` (polars LazyFrame).

One class, so the three accessors have the same methods and signatures. It keeps only
the frame: the connection comes from ``conn=`` or `nsframe.get_default()` on each call.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nsframe import _frames, _sql
from nsframe._changes import MergeResult
from nsframe._connection import Connection, check_dotted_id, get_default
from nsframe._models import WriteResult, vector_dimensions
from nsframe._protocol.defaults import DEFAULT_SEARCH_K
from nsframe._table import Table
from nsframe._upload import DEFAULT_CHUNK_BYTES, ProgressArg
from nsframe.exceptions import PartialWriteError, TableAlreadyExistsError

TO_TABLE_MODES = ("create", "append", "overwrite")
# pandas' to_sql spelling, still accepted (with a DeprecationWarning) for the same modes.
IF_EXISTS = {"fail": "create", "append": "append", "replace": "overwrite"}
DEFAULT_SEARCH_BATCH = 256
DEFAULT_DELETE_BATCH = 1000


def resolve(table: Table | str, conn: Connection | None = None,
            branch: str | None = None) -> Table:
    """A `Table` from a handle or an id (``"db$items"``, on ``conn`` or the default)."""
    if isinstance(table, Table):
        found = table
    elif isinstance(table, str):
        found = (conn if conn is not None else get_default()).table(table)
    else:
        raise TypeError(f"table must be a nsframe Table or a table id string, got {table!r}.")
    return found if branch is None else found.branch(branch)


class FrameAccessor:
    """nsframe methods on a frame (``df.ns``); they hold no state but the frame."""

    def __init__(self, frame: Any) -> None:
        self._frame = frame

    def insert(self, table: Table | str, *, mode: str = "append", branch: str | None = None,
               conn: Connection | None = None, chunk_size: int = DEFAULT_CHUNK_BYTES,
               progress: ProgressArg = None,
               vector_columns: Mapping[str, int] | None = None,
               embed_batch_size: int | None = None) -> WriteResult:
        """Insert the frame's rows into ``table`` (see `Table.insert`; a vector column
        the frame lacks is filled by the table's embedding function).

        Args:
            table: A `Table`, or a table id resolved on ``conn`` (or the default).
            mode: ``"append"`` or ``"overwrite"``.
            branch: Write to this branch of the table.
            conn: The connection for a table id; default `nsframe.get_default()`.
            chunk_size: Bytes per request; larger frames go as several inserts.
            progress: True, False, a callable ``(rows_done, bytes_done)``, or None
                (a bar for large inserts when someone watches).
            vector_columns: ``{column: dimension}``; by default equal-length float
                lists are found by themselves.

        Returns:
            The version written and the number of rows.

        Example:
            >>> df = pd.DataFrame({"id": [4], "name": ["mate"], "vector": [[0.3, 0.7]]})
            >>> df.ns.insert("items", conn=conn)    # or a Table; conn= defaults to get_default()
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> tbl.count_rows()
            4
        """
        return resolve(table, conn, branch).insert(
            self._frame, mode, chunk_size=chunk_size, progress=progress,
            vector_columns=vector_columns, embed_batch_size=embed_batch_size)

    def to_table(self, table: Table | str, *, mode: str = "create",
                 branch: str | None = None, conn: Connection | None = None,
                 chunk_size: int = DEFAULT_CHUNK_BYTES, progress: ProgressArg = None,
                 vector_columns: Mapping[str, int] | None = None,
                 if_exists: str | None = None,
                 primary_key: str | Sequence[str] | None = None, embedding: Any = None,
                 embed_batch_size: int | None = None) -> Table:
        """Write the frame as a table, creating it when needed; returns the table.

        ``mode`` (the words of LanceDB's ``create_table`` and ``add``): ``"create"``
        (raise `TableAlreadyExistsError` if the table exists), ``"append"`` (add the
        rows, creating the table if needed) or ``"overwrite"`` (a new version with only
        these rows). With ``branch``, the table exists: ``append`` or ``overwrite``
        write to that branch. ``if_exists`` (pandas' ``to_sql`` words ``"fail"``,
        ``"append"``, ``"replace"``) is deprecated but still works.

        ``embedding`` (an embedding function or config, as in
        `Connection.create_table`): a table this call creates records it and gets its
        vectors from it; an existing table fills vectors with its own functions.

        Example:
            >>> df = pd.DataFrame({"id": [1, 2], "vector": [[0.1, 0.2], [0.3, 0.4]]})
            >>> df.ns.to_table("points", conn=conn)
            Table('points', main)
            >>> df.ns.to_table("points", conn=conn, mode="append").count_rows()
            4
        """
        if if_exists is not None:
            if if_exists not in IF_EXISTS:
                raise ValueError(f"if_exists must be one of {', '.join(IF_EXISTS)}; "
                                 f"got {if_exists!r}.")
            warnings.warn(f"to_table(if_exists={if_exists!r}) is deprecated: pass "
                          f"mode={IF_EXISTS[if_exists]!r}.", DeprecationWarning, stacklevel=2)
            mode = IF_EXISTS[if_exists]
        if mode not in TO_TABLE_MODES:
            raise ValueError(f"mode must be one of {', '.join(TO_TABLE_MODES)}; got {mode!r}.")
        if branch is not None and mode == "create":
            raise ValueError("A branch exists only in an existing table: pass "
                             "mode='append' or mode='overwrite' to write to it.")
        tbl = resolve(table, conn, branch)
        if isinstance(table, str):
            check_dotted_id(tbl._client, table, tbl)
        options: dict[str, Any] = {"chunk_size": chunk_size, "progress": progress,
                                   "vector_columns": vector_columns,
                                   "embed_batch_size": embed_batch_size}
        if branch is not None or (mode == "append" and tbl._client.table_exists(tbl.id)):
            # A branch exists only in an existing table: write into it.
            tbl._upload(self._frame, mode=mode, create=None, **options)
            return tbl
        try:
            tbl._upload(self._frame, mode="overwrite", create=mode if mode == "overwrite"
                        else "create", primary_key=primary_key, embedding=embedding,
                        **options)
        except TableAlreadyExistsError as exc:
            raise exc.reword(
                f"Table {tbl.id!r} already exists: pass mode='append' to add these rows to "
                "it, or mode='overwrite' to replace its rows with them."
            ) from None
        return tbl

    def search(self, table: Table | str, *, column: str | None = None,
               k: int = DEFAULT_SEARCH_K,
               where: str | None = None, select: Sequence[str] | None = None,
               distance_type: str | None = None, branch: str | None = None,
               conn: Connection | None = None,
               batch_size: int = DEFAULT_SEARCH_BATCH) -> Any:
        """The ``k`` rows of ``table`` nearest to each row's vector, as the same kind of
        frame; its ``query_index`` column is the position of the frame row it answers.

        Args:
            column: The vector column, in the frame and in the table (default: the
                table's only vector column).
            where: A SQL filter on the table's rows, applied before the search (each
                frame row gets up to ``k`` matching rows).
            select: Table columns to return (``query_index`` and ``_distance`` always are).
            batch_size: Query vectors per request.

        When the frame has no ``column`` but holds the source column of the table's
        embedding function (``text``, say), those query strings are embedded, all in
        one call, and searched as vectors.

        Example:
            >>> queries = pd.DataFrame({"vector": [[0.1, 0.9], [0.8, 0.2]]})
            >>> queries.ns.search(tbl, k=1)[["query_index", "id", "name", "_distance"]]
               query_index  id    name  _distance
            0            0   1     tea        0.0
            1            1   2  coffee        0.0
        """
        tbl = resolve(table, conn, branch)
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size!r}.")
        column, dim = _vector_column(tbl, column)
        pages: list[pa.Table] = []
        start = 0
        queries = _text_queries(self._frame, tbl, column, dim, batch_size)
        if queries is None:
            queries = _frame_vectors(self._frame, column, dim, batch_size)
        for vectors in queries:
            query = tbl.search(vectors, column=column).limit(k)
            if where is not None:
                # Filter first, so that each row gets k matching neighbours.
                query = query.where(where, prefilter=True)
            if select is not None:
                query = query.select(list(select))
            if distance_type is not None:
                query = query.distance_type(distance_type)
            page = query.to_arrow()
            index = page.schema.get_field_index("query_index")
            if index >= 0 and start:
                shifted = pc.add(page.column(index), pa.scalar(start, page.schema[index].type))
                page = page.set_column(index, page.schema.field(index), shifted)
            pages.append(page)
            start += len(vectors)
        if not pages:
            empty = tbl.search([0.0] * dim, column=column).limit(1)
            if select is not None:
                empty = empty.select(list(select))
            head = empty.to_arrow().slice(0, 0)
            pages.append(head.add_column(0, "query_index", pa.array([], pa.int32())))
        return _frames.like(self._frame, pa.concat_tables(pages, promote_options="default"))

    def upsert(self, table: Table | str, *, on: str | Sequence[str] = "id",
               branch: str | None = None, conn: Connection | None = None,
               vector_columns: Mapping[str, int] | None = None,
               embed_batch_size: int | None = None) -> MergeResult:
        """Update the rows of ``table`` whose key (``on``: one column or several) is in
        the frame, and insert the frame's other rows: one merge insert, one version.

        Columns the frame leaves out keep their values in updated rows (and are null in
        inserted ones).

        Example:
            >>> changed = pd.DataFrame({"id": [3, 4], "name": ["hot cocoa", "mate"],
            ...                         "vector": [[0.5, 0.5], [0.3, 0.7]]})
            >>> changed.ns.upsert(tbl, on="id")
            MergeResult(version=2, num_inserted_rows=1, num_updated_rows=1, num_deleted_rows=0)
        """
        merge = resolve(table, conn, branch).merge_insert(on)
        return (merge.when_matched_update_all().when_not_matched_insert_all()
                .execute(self._frame, vector_columns=vector_columns,
                         embed_batch_size=embed_batch_size))

    def delete_matching(self, table: Table | str, *, on: str | Sequence[str] = "id",
                        branch: str | None = None, conn: Connection | None = None,
                        batch_size: int = DEFAULT_DELETE_BATCH) -> WriteResult:
        """Delete the rows of ``table`` whose key (``on``: one column or several) is in
        the frame. Keys are sent as quoted literals, ``batch_size`` keys per delete.

        Raises:
            PartialWriteError: a delete after the first failed; earlier ones stay.

        Example:
            >>> stale = pd.DataFrame({"id": [1, 2]})
            >>> stale.ns.delete_matching(tbl, on="id")
            WriteResult(version=2, num_rows=2, transaction_id=None)
            >>> tbl.count_rows()
            1
        """
        tbl = resolve(table, conn, branch)
        names = [on] if isinstance(on, str) else list(on)
        if not names:
            raise ValueError("delete_matching() needs at least one key column in on=.")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size!r}.")
        keys = _frame_keys(self._frame, names)
        deleted, version, done = 0, None, 0
        for piece in _frames.batched(keys, batch_size):
            try:
                result = tbl.delete(_key_filter(names, piece))
            except Exception as exc:
                if done == 0:
                    raise
                raise PartialWriteError(
                    f"Deleting from {tbl.id!r} failed in batch {done + 1} ({exc}). The {done} "
                    f"batch(es) before it are committed: {deleted} rows deleted, table version "
                    f"{version}.",
                    table=tbl.id, rows_committed=deleted, chunks_committed=done,
                    version=version,
                ) from exc
            done += 1
            deleted += result.num_rows or 0
            version = result.version if result.version is not None else version
        return WriteResult(version=version, num_rows=deleted,
                           raw={"num_deleted_rows": deleted, "batches": done})


def _vector_column(tbl: Table, column: str | None) -> tuple[str, int]:
    dims = vector_dimensions(tbl.schema)
    if column is None:
        if len(dims) != 1:
            raise ValueError(f"Table {tbl.id!r} has vector columns {sorted(dims)}: name one "
                             "with column=.")
        column = next(iter(dims))
    if column not in dims:
        raise ValueError(f"Column {column!r} is not a vector column of table {tbl.id!r} "
                         f"(vector columns: {sorted(dims)}).")
    return column, dims[column]


def _text_queries(frame: Any, tbl: Table, column: str, dim: int,
                  batch_size: int) -> Iterator[list[list[float]]] | None:
    """The frame's query strings embedded by the table's function for ``column`` (None
    when the frame has the vector column itself, or the table no function)."""
    names = _columns(frame, _frames.frame_kind(frame))
    if column in names:
        return None
    from nsframe.embeddings import _apply

    conf = _apply.query_config(tbl, column, required=False)
    if conf is None or conf.source_column not in names:
        return None
    source = _frames.to_source(_select(frame, [conf.source_column]), vector_columns={})
    pieces = [b.column(0) for b in source.batches]
    texts = pa.concat_arrays(pieces) if pieces else pa.array([], pa.string())
    if texts.null_count:
        missing = pc.index(pc.is_null(texts), True).as_py()
        raise ValueError(f"Row {missing} of the frame has no text in "
                         f"{conf.source_column!r}: drop it before searching.")
    vectors = _apply.embed_queries(conf, texts.to_pylist()) if len(texts) else \
        np.zeros((0, dim), dtype=np.float32)
    rows = vectors.tolist()
    return (rows[i:i + batch_size] for i in range(0, len(rows), batch_size))


def _select(frame: Any, names: list[str]) -> Any:
    kind = _frames.frame_kind(frame)
    missing = [n for n in names if n not in _columns(frame, kind)]
    if missing:
        raise ValueError(f"The frame has no column {missing[0]!r} "
                         f"(columns: {_columns(frame, kind)}).")
    return frame[names] if kind == "pandas" else frame.select(names)


def _columns(frame: Any, kind: str | None) -> list[str]:
    if kind == "polars-lazy":
        return list(frame.collect_schema().names())
    return [str(c) for c in frame.columns]


def _frame_vectors(frame: Any, column: str, dim: int,
                   batch_size: int) -> Iterator[list[list[float]]]:
    source = _frames.to_source(_select(frame, [column]), vector_columns={column: dim})
    row = 0
    pending: list[list[float]] = []
    for batch in source.batches:
        vectors = batch.column(0)
        if vectors.null_count:
            missing = row + pc.index(pc.is_null(vectors), True).as_py()
            raise ValueError(f"Row {missing} of the frame has no vector in {column!r}: drop "
                             "it before searching.")
        flat = vectors.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        pending.extend(flat.tolist())
        row += batch.num_rows
        while len(pending) >= batch_size:
            yield pending[:batch_size]
            pending = pending[batch_size:]
    if pending:
        yield pending


def _frame_keys(frame: Any, names: list[str]) -> list[Any]:
    source = _frames.to_source(_select(frame, names), vector_columns={})
    keys: dict[Any, None] = {}
    for batch in source.batches:
        columns = [batch.column(i).to_pylist() for i in range(len(names))]
        for key in zip(*columns, strict=True):
            if None not in key:  # NULL equals nothing: a null key matches no row
                keys[key if len(names) > 1 else key[0]] = None
    return list(keys)


def _key_filter(names: list[str], keys: Sequence[Any]) -> str:
    if len(names) == 1:
        return f"{_sql.identifier(names[0])} IN ({', '.join(_sql.literal(k) for k in keys)})"
    clauses = (
        "(" + " AND ".join(f"{_sql.identifier(n)} = {_sql.literal(v)}"
                           for n, v in zip(names, key, strict=True)) + ")"
        for key in keys
    )
    return " OR ".join(clauses)
