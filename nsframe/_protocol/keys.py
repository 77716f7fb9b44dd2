"""A table's primary key, as Lance keeps it: metadata of each key field of the schema.

``lance-schema:unenforced-primary-key`` = ``"true"`` marks a key field, and
``lance-schema:unenforced-primary-key:position`` = 1, 2, ... orders the fields of a key of
several columns. Lance wants key fields non-null, so declaring a key marks them so. The
client writes this metadata into the schema of a create (so that any Lance server sees
the key) and the server applies the same rules to what it receives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from nsframe.exceptions import InvalidInputError

PRIMARY_KEY = "lance-schema:unenforced-primary-key"
POSITION = f"{PRIMARY_KEY}:position"


def key_columns(schema: pa.Schema) -> list[str]:
    """The top-level columns the schema's metadata declares the key, in key order."""
    marked = [(n, f) for n, f in enumerate(schema) if _marked(f)]

    def position(item: tuple[int, pa.Field]) -> tuple[int, int]:
        text = (item[1].metadata or {}).get(POSITION.encode(), b"")
        return (int(text) if text.isdigit() else 1 << 30, item[0])

    return [f.name for _, f in sorted(marked, key=position)]


def keyed_schema(schema: pa.Schema, columns: str | Sequence[str] | None,
                 label: str) -> pa.Schema:
    """``schema`` with its key declared: the top-level ``columns`` if given, else the key
    its fields' metadata declares (if any); each key field non-null. ``schema`` itself
    when there is no key."""
    marked = key_columns(schema)
    wanted = marked if columns is None else [columns] if isinstance(columns, str) \
        else list(columns)
    # A name in backticks is quoted, as in merge_insert's `on`.
    wanted = [c[1:-1] if len(c) > 1 and c[0] == c[-1] == "`" else c for c in wanted]
    if not wanted:
        return schema
    unknown = [c for c in wanted if c not in schema.names]
    if unknown:
        raise InvalidInputError(
            f"The primary key of table {label!r} names {', '.join(map(repr, unknown))}, "
            f"which the data does not have: name top-level columns of {schema.names}."
        )
    if marked and sorted(marked) != sorted(wanted):
        raise InvalidInputError(
            f"The primary key {wanted} of table {label!r} differs from the one the "
            f"schema's field metadata declares ({marked}): give one of them."
        )
    if len(set(wanted)) != len(wanted):
        raise InvalidInputError(f"The primary key {wanted} names a column twice.")
    fields = []
    for field in schema:
        if field.name in wanted:
            metadata = {**(field.metadata or {}), PRIMARY_KEY.encode(): b"true"}
            if len(wanted) > 1:
                metadata[POSITION.encode()] = str(wanted.index(field.name) + 1).encode()
            field = field.with_nullable(False).with_metadata(metadata)
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


def keyed_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema
                  ) -> Iterator[pa.RecordBatch]:
    """``batches`` under ``schema`` (from `keyed_schema`); a null in a key column raises
    `InvalidInputError` naming it."""
    key = key_columns(schema)
    for batch in batches:
        for name in key:
            if batch.column(name).null_count:
                raise InvalidInputError(
                    f"The primary key column {name!r} holds nulls: a key identifies its "
                    "row, so give every row a value there."
                )
        yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)


def _marked(field: pa.Field) -> bool:
    value = (field.metadata or {}).get(PRIMARY_KEY.encode())
    return value is not None and value.decode().strip().lower() != "false"
