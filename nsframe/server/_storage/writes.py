"""The Lance write path: an incoming Arrow stream into a table, committed whole or not at all."""

from __future__ import annotations

from typing import Protocol

import lance
import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe.exceptions import SchemaMismatchError, TableAlreadyExistsError
from nsframe.server._storage.catalog import Catalog, TableRef, normalize_branch
from nsframe.server._storage.errors import lance_errors

# Compaction's default fragment size; a fragment with fewer rows counts as small.
DEFAULT_TARGET_ROWS = 1024 * 1024


class IncomingBatches(Protocol):
    """An Arrow stream being received: its schema, its batches, and what went wrong."""

    schema: pa.Schema
    num_rows: int
    # The client's mistake (a malformed stream, a body too large) that stopped the read.
    error: Exception | None

    def is_empty(self) -> bool: ...

    def reader(self) -> pa.RecordBatchReader: ...


def write_batches(catalog: Catalog, ref: TableRef, stream: IncomingBatches, *, mode: str,
                  label: str, branch: str | None = None) -> tuple[LanceDataset, int]:
    """Write ``stream`` into ``ref``; returns the new dataset and the rows written.

    ``mode`` is Lance's: "create", "append" or "overwrite". Nothing is committed unless
    the whole stream was read and written.
    """
    existing: LanceDataset | None = None
    if mode != "create":
        existing = catalog.dataset(ref, branch=branch)
    if mode == "append" and existing is not None:
        check_insert_schema(stream.schema, existing.schema, label)
        if stream.is_empty():
            return existing, 0
    target: str | LanceDataset = ref.uri
    if normalize_branch(branch) is not None and existing is not None:
        target = existing
    with lance_errors(f"Writing to table {label!r} failed"):
        try:
            if mode == "create":
                ds = _create_exclusive(catalog, ref, stream, label)
            else:
                ds = lance.write_dataset(stream.reader(), target, mode=mode,
                                         session=catalog.session)
        except Exception:
            if stream.error is not None:
                raise stream.error from None
            raise
    # A declared table's properties file stays: it now holds the created table's properties.
    catalog.remember(ref, branch, ds)
    return ds, stream.num_rows


def _create_exclusive(catalog: Catalog, ref: TableRef, stream: IncomingBatches,
                      label: str) -> LanceDataset:
    with catalog.creation_lock(ref):
        if catalog.table_state(ref) == "created":
            raise TableAlreadyExistsError(
                f"Table {label!r} was created by another request at the same time: insert "
                "into it, or create with mode exist_ok or overwrite."
            )
        return lance.write_dataset(stream.reader(), ref.uri, mode="create",
                                   session=catalog.session)

def check_insert_schema(incoming: pa.Schema, table: pa.Schema, label: str) -> None:
    """Raise `SchemaMismatchError` naming each difference between ``incoming`` and ``table``."""
    problems: list[str] = []
    for field in incoming:
        if field.name not in table.names:
            problems.append(f"column {field.name!r} is not in the table")
            continue
        expected = table.field(field.name)
        if not field.type.equals(expected.type):
            problems.append(f"column {field.name!r} is {field.type}, the table has {expected.type}")
    for expected in table:
        if expected.name not in incoming.names and not expected.nullable:
            problems.append(f"column {expected.name!r} is missing and may not be null")
    if len(set(incoming.names)) != len(incoming.names):
        problems.append("a column name appears twice")
    if problems:
        raise SchemaMismatchError(
            f"The data does not match the schema of table {label!r}: "
            + "; ".join(problems)
            + ". Cast the columns to the table's types, or insert with mode=overwrite to "
            "replace the table."
        )
