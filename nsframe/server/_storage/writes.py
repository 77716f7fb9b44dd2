"""The Lance write path: an incoming Arrow stream into a table, committed whole or not at all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import lance
import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe._protocol.defaults import normalize_branch
from nsframe._protocol.keys import key_columns, keyed_schema
from nsframe.exceptions import SchemaMismatchError, TableAlreadyExistsError, TableNotFoundError
from nsframe.server._storage.catalog import Catalog, TableRef, table_key
from nsframe.server._storage.entries import Entry
from nsframe.server._storage.errors import lance_errors
from nsframe.server._storage.keys import KeyedBatches, declared_key

# Compaction's default fragment size; a fragment with fewer rows counts as small.
DEFAULT_TARGET_ROWS = 1024 * 1024
# Lance scans fastest on batches of about this many rows (PERFORMANCE_NOTES.md).
WRITE_BATCH_ROWS = 8192


class IncomingBatches(Protocol):
    """An Arrow stream being received: its schema, its batches, and what went wrong."""

    schema: pa.Schema
    num_rows: int
    # The client's mistake (a malformed stream, a body too large) that stopped the read.
    error: Exception | None

    def is_empty(self) -> bool: ...

    def reader(self) -> pa.RecordBatchReader: ...


def write_batches(catalog: Catalog, ref: TableRef, stream: IncomingBatches, *, mode: str,
                  label: str, branch: str | None = None,
                  primary_key: list[str] | None = None) -> tuple[LanceDataset, int]:
    """Append ``stream`` to the created table ``ref``, or overwrite it with ``stream``
    (``mode`` "append" or "overwrite", which may declare a ``primary_key``); returns the
    new dataset and the rows written.

    Nothing is committed unless the whole stream was read and written.
    """
    # An append waits while a schema change of the table takes its turn (`turns`).
    with catalog.turns.insert(ref.key), catalog.leases.writing(ref.key), \
            _dropped_meanwhile(catalog, ref):
        existing = catalog.dataset(ref, branch=branch)
        if mode == "append":
            check_insert_schema(stream.schema, existing.schema, label)
            if stream.is_empty():
                return existing, 0
        if mode == "overwrite" and primary_key is None and not key_columns(stream.schema):
            # New rows, same table: it keeps its key (data that declares one replaces it).
            kept = declared_key(existing)
            primary_key = kept if kept and set(kept) <= set(stream.schema.names) else None
        target: str | LanceDataset = ref.uri if normalize_branch(branch) is None else existing
        ds = _write(catalog, stream, target, mode, label, primary_key)
    catalog.remember(ref, branch, ds)
    return ds, stream.num_rows


def create_table(catalog: Catalog, parts: list[str], stream: IncomingBatches, *,
                 label: str, previous: Entry | None, properties: dict[str, str],
                 primary_key: list[str] | None = None) -> tuple[LanceDataset, int]:
    """Create table ``parts`` with ``stream`` as its first version, its key
    ``primary_key`` (or the one the stream's field metadata declares, if any).

    The data goes to a data folder of its own, which one conditional catalog write then
    files under the table's name: of two concurrent creates exactly one is filed, and
    the other's folder is deleted (409).
    """
    uid = catalog.new_table_uid(parts[-1])
    with catalog.leases.writing(table_key(uid)), _unless_filed(catalog, uid) as filed:
        ds = _write(catalog, stream, catalog.objects.uri(table_key(uid)), "create", label,
                    primary_key)
        ref = catalog.commit_created(parts, previous, uid, properties)
        if ref is None:
            raise TableAlreadyExistsError(
                f"Table {label!r} was created by another request at the same time: insert "
                "into it, or create with mode exist_ok or overwrite."
            )
        filed()
    catalog.remember(ref, None, ds)
    return ds, stream.num_rows


# Puts rows into the table another request created first: a merge, where append would
# repeat the keys of a concurrent first merge.
Combine = Callable[[TableRef, IncomingBatches], LanceDataset]


def first_insert(catalog: Catalog, declared: TableRef, stream: IncomingBatches, *,
                 label: str, combine: Combine | None = None) -> tuple[LanceDataset, int]:
    """spec/SEED_SPEC.md: an insert into a declared table creates it with the data.

    Written as a create; when another first insert was filed first, these rows are
    appended to the table it created (or given to ``combine``), so both acknowledged
    inserts are kept.
    """
    uid = catalog.new_table_uid(declared.name)
    properties = catalog.table_properties(declared)
    with catalog.leases.writing(table_key(uid)), _unless_filed(catalog, uid) as filed:
        ours = _write(catalog, stream, catalog.objects.uri(table_key(uid)), "create", label)
        ref = catalog.commit_created(declared.id, declared.entry, uid, properties)
        if ref is not None:
            filed()
            catalog.remember(ref, None, ours)
            return ours, stream.num_rows
        winner = catalog.require_table(declared.id)
        if combine is not None:
            return combine(winner, _Rows(ours)), stream.num_rows
        with catalog.leases.writing(winner.key), _dropped_meanwhile(catalog, winner):
            ds = _write(catalog, _Rows(ours), winner.uri, "append", label)
    catalog.remember(winner, None, ds)
    return ds, stream.num_rows


def _write(catalog: Catalog, stream: IncomingBatches, target: str | LanceDataset, mode: str,
           label: str, primary_key: list[str] | None = None) -> LanceDataset:
    with lance_errors(f"Writing to table {label!r} failed"):
        if mode != "append":  # the write that sets the schema declares its key
            keyed = keyed_schema(stream.schema, primary_key, label)
            if keyed is not stream.schema:
                stream = KeyedBatches(stream, keyed)
        try:
            return lance.write_dataset(stream.reader(), target, mode=mode,
                                       session=catalog.session,
                                       storage_options=catalog.datasets.storage_options)
        except Exception:
            if stream.error is not None:
                raise stream.error from None
            raise


class _Rows:
    """A written dataset's rows as an incoming stream (to move them to another table)."""

    def __init__(self, ds: LanceDataset) -> None:
        self.schema = ds.schema
        self.num_rows = 0
        self.error: Exception | None = None
        self._ds = ds

    def is_empty(self) -> bool:
        return self._ds.count_rows() == 0

    def reader(self) -> pa.RecordBatchReader:
        return self._ds.scanner(batch_size=WRITE_BATCH_ROWS).to_reader()


@contextmanager
def _unless_filed(catalog: Catalog, uid: str) -> Iterator[Callable[[], None]]:
    """Delete the data folder ``uid`` when the block ends without having filed it."""
    done = False

    def filed() -> None:
        nonlocal done
        done = True

    try:
        yield filed
    finally:
        if not done:
            catalog.delete_data(uid)


@contextmanager
def _dropped_meanwhile(catalog: Catalog, ref: TableRef) -> Iterator[None]:
    """A write that failed because its table was dropped under it is a 404."""
    try:
        yield
    except Exception:
        current = catalog.find_table(ref.id)
        if current is None or current.entry.uid != ref.entry.uid:
            raise TableNotFoundError(
                f"Table {ref.label()!r} was dropped while this write ran: nothing was written."
            ) from None
        raise


def check_insert_schema(incoming: pa.Schema, table: pa.Schema, label: str) -> None:
    """Raise `SchemaMismatchError` naming each difference between ``incoming`` and ``table``,
    and for each kind of difference the change to the data that fixes it."""
    extra = [f.name for f in incoming if f.name not in table.names]
    mistyped = [f"column {f.name!r} is {f.type}, the table has {table.field(f.name).type}"
                for f in incoming
                if f.name in table.names and not f.type.equals(table.field(f.name).type)]
    missing = [f.name for f in table if f.name not in incoming.names and not f.nullable]
    problems: list[str] = []
    advice: list[str] = []
    if extra:
        problems += [f"column {name!r} is not in the table" for name in extra]
        advice.append("leave out the columns the table does not have, or add them to the "
                      "table first (add_columns)")
    if mistyped:
        problems += mistyped
        advice.append("cast the columns to the table's types")
    if missing:
        problems += [f"column {name!r} is missing and may not be null" for name in missing]
        advice.append("add the missing columns to the data")
    if len(set(incoming.names)) != len(incoming.names):
        problems.append("a column name appears twice")
        advice.append("give each column a name of its own")
    if problems:
        raise SchemaMismatchError(
            f"The data does not match the schema of table {label!r}: " + "; ".join(problems)
            + ". To insert it, " + "; ".join(advice) + "."
        )
