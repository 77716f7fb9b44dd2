"""Primary keys: Lance's ``lance-schema:unenforced-primary-key`` field metadata.

Lance keeps a table's key in the schema, as metadata of each key field (``"true"``, and
``...:position`` = 1, 2, ... for a key of several columns). Lance does not check that
keys are unique; what it does is see two concurrent merge_inserts *on the key* that
insert the same key value: the second to commit gets a conflict and retries against the
new version, where its row is now a match. Lance requires key fields to be non-null
leaves; the key can be added to a table later, once, and never changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lance.dataset import LanceDataset
from lance.schema import LanceSchema

from nsframe.exceptions import InvalidInputError

if TYPE_CHECKING:  # writes.py imports this module
    from nsframe.server._storage.writes import IncomingBatches

PRIMARY_KEY = "lance-schema:unenforced-primary-key"
POSITION = f"{PRIMARY_KEY}:position"


def declared_key(ds: LanceDataset) -> list[str]:
    """The table's key columns (dotted paths), in key order; empty when none is declared."""
    return _key_paths(ds.lance_schema)


def _key_paths(schema: LanceSchema) -> list[str]:
    order = {field.id(): n for n, field in enumerate(schema.unenforced_primary_key())}
    found: list[tuple[int, str]] = []

    def walk(fields: list[Any], prefix: str) -> None:  # Lance's LanceField
        for field in fields:
            path = f"{prefix}{field.name()}"
            if field.id() in order:
                found.append((order[field.id()], path))
            walk(field.children(), f"{path}.")

    walk(schema.fields(), "")
    return [path for _, path in sorted(found)]


def keyed_schema(schema: pa.Schema, columns: list[str] | None, label: str) -> pa.Schema:
    """``schema`` with its key declared: the top-level ``columns`` if given (else the
    key its fields' metadata declares), each key field non-null, as Lance requires."""
    marked = [f.name for f in schema if _marked(f)]
    if columns is None:
        columns = marked
    # A name in backticks is quoted, as in merge_insert's `on`.
    columns = [c[1:-1] if len(c) > 1 and c[0] == c[-1] == "`" else c for c in columns]
    if not columns:
        return schema
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise InvalidInputError(
            f"The primary key of table {label!r} names {', '.join(map(repr, unknown))}, "
            f"which the data does not have: name top-level columns of {schema.names}."
        )
    if marked and sorted(marked) != sorted(columns):
        raise InvalidInputError(
            f"The primary key {columns} of table {label!r} differs from the one the schema's "
            f"field metadata declares ({marked}): send one of them."
        )
    if len(set(columns)) != len(columns):
        raise InvalidInputError(f"The primary key {columns} names a column twice.")
    fields = []
    for field in schema:
        if field.name in columns:
            metadata = {**(field.metadata or {}), PRIMARY_KEY.encode(): b"true"}
            if len(columns) > 1:
                metadata[POSITION.encode()] = str(columns.index(field.name) + 1).encode()
            field = field.with_nullable(False).with_metadata(metadata)
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


def _marked(field: pa.Field) -> bool:
    value = (field.metadata or {}).get(PRIMARY_KEY.encode())
    return value is not None and value.decode().strip().lower() != "false"


class KeyedBatches:
    """An incoming stream with its key declared (`keyed_schema`); a null in a key column
    stops it, as the client's mistake."""

    def __init__(self, inner: IncomingBatches, schema: pa.Schema) -> None:
        self.inner = inner
        self.schema = schema
        self._key = [f.name for f in schema if _marked(f) and not f.nullable]
        self._error: Exception | None = None

    @property
    def num_rows(self) -> int:
        return self.inner.num_rows

    @num_rows.setter
    def num_rows(self, value: int) -> None:
        self.inner.num_rows = value

    @property
    def error(self) -> Exception | None:
        return self._error or self.inner.error

    @error.setter
    def error(self, value: Exception | None) -> None:
        self._error = value

    def is_empty(self) -> bool:
        return self.inner.is_empty()

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        for batch in self.inner.reader():
            for name in self._key:
                if batch.column(name).null_count:
                    self._error = InvalidInputError(
                        f"The primary key column {name!r} holds nulls: a key identifies "
                        "its row, so give every row a value there."
                    )
                    raise self._error
            yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
