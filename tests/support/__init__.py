"""Plain helpers shared by the tests (fixtures stay in the conftest.py files).

This module holds what almost every HTTP test needs: Arrow IPC bodies and the contract's error
body. The submodules are for a few tests each: ``paging`` (walk a paginated listing),
``querykit`` (generated tables, queries, brute force), ``versioned`` (rows at any version),
``lab`` (a real JupyterLab for tests/ui).
"""

from __future__ import annotations

import io
import urllib.parse
from typing import Any

import numpy as np
import pyarrow as pa
import requests

# The media type an Arrow body must carry (JSON bodies: requests' json= sets theirs).
ARROW_HEADERS = {"Content-Type": "application/vnd.apache.arrow.stream"}


def ipc_stream(data: pa.Table | pa.RecordBatch | dict[str, Any],
               schema: pa.Schema | None = None) -> bytes:
    """Encode ``data`` as an Arrow IPC stream body."""
    table = data if isinstance(data, pa.Table) else pa.table(data, schema=schema) \
        if isinstance(data, dict) else pa.Table.from_batches([data])
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def read_ipc_file(content: bytes) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(content)).read_all()


def assert_error(resp: requests.Response, status: int, code: int | None = None) -> dict[str, Any]:
    """Check the contract's error body and return it."""
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()
    assert body["status"] == status
    assert body["type"].startswith("/errors/")
    assert body["title"]
    assert body["detail"]
    sent_path = urllib.parse.unquote(urllib.parse.urlsplit(str(resp.request.url)).path)
    assert urllib.parse.unquote(body["instance"]).rstrip("/") == sent_path.rstrip("/"), body
    assert body["error"] == body["detail"]
    if code is not None:
        assert body["code"] == code, body
    assert "Traceback" not in resp.text and "/home/" not in resp.text and "/tmp/" not in resp.text
    return body


def table_location(http: requests.Session, base_url: str, ident: str) -> str:
    """Where the table's Lance dataset lives (describe's ``location``): a path on a local
    root, a URI on an object store (read it with `tests.support.stores.StoreView`)."""
    resp = http.post(f"{base_url}/v1/table/{ident}/describe", json={})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["location"])



def text_vector_rows(n: int, start: int = 0, dim: int = 8) -> pa.Table:
    """``n`` rows of id (from ``start``), text and a ``dim``-wide float32 vector; the
    vectors are drawn from a generator seeded with ``start``, so a call repeats."""
    vectors = np.random.default_rng(start).random((n, dim), dtype=np.float32)
    return pa.table({"id": np.arange(start, start + n),
                     "text": [f"row {i}" for i in range(start, start + n)],
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)})
