"""Describe's JSON schema, type by type, against the spelling each client reads.

- Namespace clients get lance-namespace's spelling: exactly what pylance's reference server
  (`lance.namespace.RestAdapter`) answers for the same table.
- LanceDB's remote client gets Lance's own JSON schema: exactly what
  `lance.schema.schema_to_json` writes, which is what its parser reads.

Both answers also carry `arrow_schema`, the exact schema.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance.namespace as namespace
import pyarrow as pa
import pytest
import requests
from lance.schema import schema_to_json as lance_schema_to_json

from nsframe._protocol.schema_json import (
    schema_from_base64,
    schema_from_json,
    schema_to_lance_json,
)
from tests.support import ipc_stream

# Every column type a table created through nsframe can hold.
TYPES: list[pa.DataType] = [
    pa.null(), pa.bool_(),
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    pa.float16(), pa.float32(), pa.float64(),
    pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
    pa.date32(), pa.date64(),
    *(pa.timestamp(u) for u in ("s", "ms", "us", "ns")),
    pa.timestamp("us", "UTC"), pa.timestamp("ns", "Europe/Paris"),
    pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"),
    pa.duration("s"), pa.duration("ns"),
    pa.decimal128(10, 2), pa.decimal256(40, 5),
    pa.binary(16),
    pa.list_(pa.int32()), pa.large_list(pa.float64()),
    pa.list_(pa.float32(), 3), pa.list_(pa.list_(pa.float16(), 4)),
    pa.struct([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
]
IDS = [str(t) for t in TYPES]
LANCEDB_HEADERS = {"x-lancedb-database": "db", "user-agent": "LanceDB-Python-Client/0.40.0"}


def one_column(t: pa.DataType) -> pa.Table:
    return pa.table({"c": pa.array([None], t)})


@pytest.mark.parametrize("arrow_type", TYPES, ids=IDS)
def test_lance_spelling_is_lances_own(arrow_type: pa.DataType) -> None:
    schema = pa.schema([pa.field("c", arrow_type), pa.field("k", pa.int64(), nullable=False)],
                       metadata={"owner": "ana"})
    assert schema_to_lance_json(schema) == lance_schema_to_json(schema)
    # Lance's spelling keeps every detail, so it reads back whole.
    assert schema_from_json(schema_to_lance_json(schema)).equals(schema, check_metadata=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("reference")
    with namespace.RestAdapter("dir", {"root": str(root)}, port=0) as adapter:
        yield f"http://127.0.0.1:{adapter.port}"


def describe(http: requests.Session, url: str, headers: dict[str, str] | None = None,
             ) -> dict[str, Any]:
    # The reference server leaves the schema out unless asked for detailed metadata.
    resp = http.post(f"{url}?load_detailed_metadata=true", json={}, headers=headers or {})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def create(http: requests.Session, base: str, name: str, t: pa.DataType) -> None:
    resp = http.post(f"{base}/v1/table/{name}/create", data=ipc_stream(one_column(t)),
                     headers={"content-type": "application/vnd.apache.arrow.stream"})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("arrow_type", TYPES, ids=IDS)
def test_describe_spells_each_type_as_each_client_reads_it(
    arrow_type: pa.DataType, reference: str, base_url: str, http: requests.Session
) -> None:
    name = f"s{uuid.uuid4().hex[:10]}"
    create(http, reference, name, arrow_type)
    create(http, base_url, name, arrow_type)
    theirs = describe(http, f"{reference}/v1/table/{name}/describe")
    ours = describe(http, f"{base_url}/v1/table/{name}/describe")
    assert ours["schema"] == theirs["schema"]
    exact = schema_from_base64(ours["arrow_schema"])
    assert exact.field("c").type == arrow_type
    # LanceDB's remote client: a trailing slash and its headers.
    lancedb = describe(http, f"{base_url}/v1/table/{name}/describe/", LANCEDB_HEADERS)
    assert lancedb["schema"] == lance_schema_to_json(exact)
    assert lancedb["arrow_schema"] == ours["arrow_schema"]
