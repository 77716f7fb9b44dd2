"""Bulk work around the REST server: Daft reads and appends a table at its location.

The server hands out the table's ``location`` and, with ``--vend-storage-options``, the
options to reach it. Daft (with ``daft-lance``) reads the Lance dataset there directly,
and appends through Lance's own commit protocol; the server then serves the new version
like any other (docs/replicas.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import requests

import nsframe
from nsframe.server import RunningServer, serve_in_thread
from tests.support.s3 import S3Endpoint

daft = pytest.importorskip("daft", reason="needs the engines extra (`make` installs it)")

ROWS = 20_000
DIM = 8


def io_config(options: dict[str, str]) -> Any:
    """Daft's IOConfig from the storage options describe vends (Lance's names)."""
    return daft.io.IOConfig(s3=daft.io.S3Config(
        endpoint_url=options.get("aws_endpoint"),
        key_id=options.get("aws_access_key_id"),
        access_key=options.get("aws_secret_access_key"),
        session_token=options.get("aws_session_token"),
        region_name=options.get("aws_region"),
        use_ssl=options.get("allow_http") != "true",
    ))


def rows(first: int, count: int, seed: int = 0) -> pa.Table:
    vectors = np.random.default_rng(seed).random(count * DIM, dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(first, first + count), pa.int64()),
        "label": [f"r{i}" for i in range(first, first + count)],
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors), DIM),
    })


@pytest.fixture(scope="module")
def served(s3: S3Endpoint) -> Iterator[RunningServer]:
    with serve_in_thread(s3.new_root("engines"), storage_options=s3.options(),
                         vend_storage_options=True) as server:
        assert requests.post(f"{server.url}/v1/namespace/bulk/create", json={}).ok
        yield server


def described(server: RunningServer, table: str) -> dict[str, Any]:
    resp = requests.post(f"{server.url}/v1/table/{table}/describe", json={}, timeout=30)
    assert resp.status_code == 200, resp.text
    found: dict[str, Any] = resp.json()
    return found


def test_daft_reads_exactly_the_rows_of_to_arrow(served: RunningServer) -> None:
    with nsframe.connect(served.url) as conn:
        table = conn.create_table("bulk$read", rows(0, ROWS))
        table.insert(rows(ROWS, 1000, seed=1))  # two fragments
        table.delete("id % 7 = 0")  # and a deletion file
        expected = table.to_arrow().sort_by("id")
        location = table.location
    assert location is not None and location.startswith("s3://")
    options = described(served, "bulk$read")["storage_options"]
    got = daft.read_lance(location, io_config=io_config(options)).to_arrow()
    # Daft reads strings as large_string: the same values, in Arrow's other string type.
    assert got.sort_by("id").cast(expected.schema).equals(expected)
    assert got.num_rows == ROWS + 1000 - len(range(0, ROWS + 1000, 7))


def test_daft_appends_and_the_server_serves_the_new_version(served: RunningServer) -> None:
    with nsframe.connect(served.url) as conn:
        table = conn.create_table("bulk$append", rows(0, 1000))
        location = table.location
        assert location is not None
        options = described(served, "bulk$append")["storage_options"]
        added = daft.from_arrow(rows(1000, 5000, seed=2))
        written = added.write_lance(location, mode="append", io_config=io_config(options))
        version = written.to_pydict()["version"][0]
        assert version == 2
        # The server serves the version Daft committed, at once (reads are strong).
        assert table.version == version
        assert table.count_rows() == 6000
        assert sorted(table.to_arrow(columns=["id"]).column("id").to_pylist()) == \
            list(range(6000))
        assert [v.version for v in table.versions()] == [1, 2]
        assert table.at(version=1).count_rows() == 1000
        # ... and writes after it, through the REST interface, as usual.
        assert table.insert(rows(6000, 10, seed=3)).version == 3
        assert table.count_rows() == 6010
