"""The columns a search uses when the caller names none, read from the table's schema.

nsframe's server picks the table's only vector column, and searches every text column,
by itself. Other servers of the contract may not: pylance's reference server searches a
column named ``vector`` and nothing else, and refuses a full-text search without an
index unless the columns are named. When such a server refuses a search, the client
names the columns itself and asks once more (`Query.to_arrow`), so ``search()`` works
the same against either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from nsframe._models import Ref
from nsframe._protocol.schema_json import schema_from_base64, schema_from_json

if TYPE_CHECKING:
    from nsframe._client import Client


def vector_columns(schema: pa.Schema) -> list[str]:
    """Top-level columns of vectors (fixed-size lists of numbers) or of multivectors
    (lists of them)."""
    found = []
    for field in schema:
        t = field.type
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) \
                and pa.types.is_fixed_size_list(t.value_type):
            t = t.value_type
        if pa.types.is_fixed_size_list(t) and (pa.types.is_floating(t.value_type)
                                               or pa.types.is_integer(t.value_type)):
            found.append(field.name)
    return found


def text_columns(schema: pa.Schema) -> list[str]:
    """Top-level string columns."""
    return [f.name for f in schema
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def table_schema(client: Client, ident: str, ref: Ref) -> pa.Schema | None:
    """The schema of the table at ``ref``; None when the server does not say it."""
    data = client.describe_table(ident, version=ref.version, branch=ref.branch)
    encoded = data.get("arrow_schema")
    if isinstance(encoded, str) and encoded:
        return schema_from_base64(encoded)
    schema = data.get("schema")
    if not isinstance(schema, dict):
        return None
    try:
        return schema_from_json(schema)
    except (ValueError, KeyError):
        return None
