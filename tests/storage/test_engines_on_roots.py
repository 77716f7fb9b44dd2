"""Engines at a table's location on every root: `Table.to_lance()`, `Table.to_daft()`,
`Table.storage_options()`, against a real ``nsframe serve`` process on moto's S3 (and
DynamoDB, for ``s3+ddb://``), with ``--vend-storage-options`` on.

On ``s3+ddb://`` the location keeps its scheme and ``?ddbTableName=``: Lance then commits
through the DynamoDB table, as the server does, and an append by Daft is a version the
server serves at once (docs/operations.md, Engines at the table's location).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import StorageOptionsNotVendedError
from tests.support.s3 import S3Endpoint

from ._servers import ServerProcess

daft = pytest.importorskip("daft", reason="needs the engines extra (`make` installs it)")


def ddb_root(s3: S3Endpoint, name: str) -> str:
    table = f"commits-{uuid.uuid4().hex[:8]}"
    s3.create_commit_table(table)
    return s3.new_root(name).replace("s3://", "s3+ddb://", 1) + f"?ddbTableName={table}"


@pytest.fixture(params=["s3", "s3+ddb"])
def vending(request: pytest.FixtureRequest, s3: S3Endpoint, tmp_path: Path,
            code_under_test: Path) -> Iterator[ServerProcess]:
    """One `nsframe serve` on a fresh root of each kind, configured by the environment,
    that vends its storage options."""
    root = s3.new_root("engines") if request.param == "s3" else ddb_root(s3, "engines")
    server = ServerProcess(root, tmp_path, "vending", env=s3.env(),
                           extra_args=["--vend-storage-options"])
    server.start()
    try:
        yield server
    finally:
        server.kill()


def ddb_versions(s3: S3Endpoint, location: str) -> set[int]:
    """The versions Lance committed for the dataset at ``location`` in its DynamoDB table."""
    folder, _, query = location.partition("?")
    table = query.removeprefix("ddbTableName=")
    path = folder.split("://", 1)[1].split("/", 1)[1]  # Lance's key: the path in the bucket
    items = s3.client("dynamodb").scan(TableName=table)["Items"]
    return {int(item["version"]["N"]) for item in items if item["base_uri"]["S"] == path}


def rows(first: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + count), pa.int64()),
                     "label": [f"r{i}" for i in range(first, first + count)]})


def test_daft_reads_then_appends_and_the_server_serves_the_new_version(
        vending: ServerProcess, s3: S3Endpoint) -> None:
    with nsframe.connect(vending.url) as conn:
        conn.create_namespace("bulk")
        table = conn.create_table("bulk$events", rows(0, 100))
        table.insert(rows(100, 50))  # two fragments
        location = table.location
        assert location is not None and location.split("://")[0] == vending.root.split("://")[0]
        # The scheme and the commit table stay as describe gave them.
        assert location.startswith(vending.root.split("?")[0])
        got = table.to_daft().to_arrow()
        assert sorted(got.column("id").to_pylist()) == list(range(150))
        # Appends go through Lance's commit at the location (DynamoDB's on s3+ddb://).
        written = daft.from_arrow(rows(150, 25)).write_lance(
            location, mode="append", storage_options=table.storage_options())
        assert written.to_pydict()["version"] == [3]
        if location.startswith("s3+ddb://"):
            assert 3 in ddb_versions(s3, location), "Daft's commit skipped the DynamoDB table"
        # The server serves the version Daft committed, at once (reads are strong).
        assert table.version == 3
        assert table.count_rows() == 175
        assert sorted(table.to_arrow(columns=["id"]).column("id").to_pylist()) == \
            list(range(175))
        # ... and writes after it, through the REST interface, as usual.
        assert table.insert(rows(175, 5)).version == 4
        assert table.to_daft().count_rows() == 180


def test_to_lance_reads_the_rows_the_server_serves(vending: ServerProcess) -> None:
    with nsframe.connect(vending.url) as conn:
        conn.create_namespace("n")
        table = conn.create_table("n$t", rows(0, 40))
        table.delete("id % 4 = 0")
        ds = table.to_lance()
        assert ds.uri == table.location  # the scheme kept, s3+ddb:// included
        assert ds.version == table.version == 2
        assert ds.to_table().sort_by("id").equals(table.to_arrow().sort_by("id"))
        # Pinned: the handle's version, and the latest of its branch.
        assert table.at(version=1).to_lance().count_rows() == 40
        dev = table.branches.create("dev")
        dev.insert(rows(100, 3))
        assert dev.to_lance().count_rows() == dev.count_rows() == 33
        assert table.to_lance().count_rows() == 30
        assert dev.at(version=dev.version).to_lance().count_rows() == 33


def test_the_client_hands_out_the_vended_options(vending: ServerProcess,
                                                  s3: S3Endpoint) -> None:
    with nsframe.connect(vending.url) as conn:
        conn.create_namespace("n")
        table = conn.create_table("n$t", rows(0, 3))
        assert table.storage_options() == s3.options()


def test_storage_options_are_refused_clearly_when_the_server_does_not_vend(
        s3: S3Endpoint, tmp_path: Path, code_under_test: Path) -> None:
    server = ServerProcess(s3.new_root("novend"), tmp_path, "novend", env=s3.env())
    server.start()
    try:
        with nsframe.connect(server.url) as conn:
            conn.create_namespace("n")
            table = conn.create_table("n$t", rows(0, 3))
            with pytest.raises(StorageOptionsNotVendedError) as refused:
                table.storage_options()
            message = str(refused.value)
            assert "--vend-storage-options" in message and "vend_storage_options" in message
            assert "n$t" in message
            # The engines still open the location with credentials of the caller's own.
            assert table.to_lance(storage_options=s3.options()).count_rows() == 3
            assert table.to_daft(storage_options=s3.options()).count_rows() == 3
    finally:
        server.kill()
