"""Primary keys on the server: the key a table declares, and creates that declare one.

Lance keeps a table's key in the schema (`nsframe._protocol.keys`). Lance does not check
that keys are unique; what it does is see two concurrent merge_inserts *on the key* that
insert the same key value: the second to commit gets a conflict and retries against the
new version, where its row is now a match. Lance requires key fields to be non-null
leaves; a key can be added to a table later, once, and never changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe._protocol.keys import keyed_batches
from nsframe.exceptions import InvalidInputError

if TYPE_CHECKING:  # writes.py imports this module
    from nsframe.server._storage.writes import IncomingBatches


def declared_key(ds: LanceDataset) -> list[str]:
    """The table's key columns (dotted paths), in key order; empty when none is declared."""
    schema = ds.lance_schema
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


class KeyedBatches:
    """An incoming stream under the schema that declares its key (`keyed_schema`); a
    null in a key column stops it, as the client's mistake."""

    def __init__(self, inner: IncomingBatches, schema: pa.Schema) -> None:
        self.inner = inner
        self.schema = schema
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
        try:
            yield from keyed_batches(self.inner.reader(), self.schema)
        except InvalidInputError as exc:  # Lance sees only that the stream failed
            self._error = exc
            raise
