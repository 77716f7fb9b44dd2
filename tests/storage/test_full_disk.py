"""A full disk under a real ``nsframe serve``: every write answers 507 with the contract's
body, commits nothing, and the same write succeeds once space is freed, without a restart.

The root is a small tmpfs mounted for the module (mounting needs root, as CI runs). The
disk is filled by a file beside the root, leaving a little room: enough for the server's
own small records, not for a write's data, so each write fails inside Lance; with no room
at all, the catalog's own writes fail first.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support import assert_error

from ._rest import ARROW_STREAM, stream_bytes, wide_table
from ._servers import ServerProcess

DISK_MB = 32
ROWS = 120_000  # about 2 MB of data: more than the room left, a fraction of the disk
ROOM = 256 * 1024

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting the small tmpfs the disk fills needs root (CI runs "
    "as root)")


@pytest.fixture(scope="module")
def disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    mount = tmp_path_factory.mktemp("disk")
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount)],
                   check=True, capture_output=True, timeout=30)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, timeout=30)


@pytest.fixture(scope="module")
def server(disk: Path, tmp_path_factory: pytest.TempPathFactory,
           code_under_test: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(str(disk / "root"), tmp_path_factory.mktemp("logs"), "full")
    process.start()
    try:
        yield process
    finally:
        process.kill()


class Filler:
    """A file beside the root that takes all the disk's space but ``room`` bytes."""

    def __init__(self, disk: Path) -> None:
        self.path = disk / "filler"

    def fill(self, room: int) -> None:
        chunk = b"\xff" * (1 << 20)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for size in (1 << 20, 1 << 16, 1 << 12, 1):  # to the last byte
                try:
                    while os.write(fd, chunk[:size]):
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)
        if room:
            os.truncate(self.path, max(0, self.path.stat().st_size - room))

    def free(self) -> None:
        self.path.unlink(missing_ok=True)


@pytest.fixture
def filler(disk: Path) -> Iterator[Filler]:
    made = Filler(disk)
    yield made
    made.free()


def _post(url: str, path: str, body: Any = None, *, data: bytes | None = None,
          params: dict[str, str] | None = None) -> requests.Response:
    if data is not None:
        return requests.post(f"{url}{path}", data=data, params=params, timeout=120,
                             headers={"Content-Type": ARROW_STREAM})
    return requests.post(f"{url}{path}", json=body if body is not None else {}, timeout=120)


def _state(url: str, table: str) -> tuple[int, int]:
    described = _post(url, f"/v1/table/{table}/describe")
    assert described.status_code == 200, described.text
    counted = _post(url, f"/v1/table/{table}/count_rows")
    assert counted.status_code == 200, counted.text
    return int(described.json()["version"]), int(counted.json())


def _table(url: str) -> str:
    """A table of ROWS rows written in four fragments (so that compaction has work)."""
    ns = f"n{uuid.uuid4().hex[:8]}"
    assert _post(url, f"/v1/namespace/{ns}/create").status_code == 200
    table = f"{ns}$t"
    quarter = ROWS // 4
    made = _post(url, f"/v1/table/{table}/create", data=stream_bytes(wide_table(0, quarter)))
    assert made.status_code == 200, made.text
    for i in range(1, 4):
        more = _post(url, f"/v1/table/{table}/insert",
                     data=stream_bytes(wide_table(i * quarter, quarter, seed=i)))
        assert more.status_code == 200, more.text
    return table


WRITES: dict[str, tuple[str, Any, dict[str, str] | None]] = {
    # name: (route, JSON body or an Arrow table's first id, query parameters)
    "insert": ("insert", ROWS, None),
    "merge_insert": ("merge_insert", ROWS // 2, {"on": "id", "when_matched_update_all": "true",
                                                   "when_not_matched_insert_all": "true"}),
    "update": ("update", {"updates": [["x", "x + 1"]]}, None),
    "add_columns": ("add_columns", {"new_columns": [{"name": "y", "expression": "x * 2"}]},
                    None),
    "optimize": ("optimize", {}, None),
    "create_index": ("create_index", {"column": "x", "index_type": "BTREE"}, None),
}


def _write(url: str, table: str, kind: str) -> requests.Response:
    route, body, params = WRITES[kind]
    if isinstance(body, int):
        return _post(url, f"/v1/table/{table}/{route}", params=params,
                     data=stream_bytes(wide_table(body, ROWS, seed=9)))
    return _post(url, f"/v1/table/{table}/{route}", body)


def _assert_full(resp: requests.Response) -> None:
    body = assert_error(resp, 507)
    assert body["type"] == "/errors/insufficient-storage", body
    assert "full" in body["detail"], body
    assert "/" not in body["detail"].replace("/errors", ""), body  # no path of the server


@pytest.mark.parametrize("kind", list(WRITES))
def test_a_write_on_a_full_disk_is_507_and_succeeds_once_space_is_freed(
        server: ServerProcess, filler: Filler, kind: str) -> None:
    """A little room left: the server's small records fit, the write's data does not."""
    url = server.url
    table = _table(url)
    before = _state(url, table)
    filler.fill(ROOM)
    _assert_full(_write(url, table, kind))
    assert _state(url, table) == before, "a write on a full disk changed the table"
    filler.free()
    done = _write(url, table, kind)
    assert done.status_code == 200, done.text
    assert _state(url, table)[0] > before[0]


def test_catalog_writes_on_a_full_disk_are_507(server: ServerProcess, filler: Filler) -> None:
    """No room at all: the server's own records and catalog entries cannot be written."""
    url = server.url
    table = _table(url)
    before = _state(url, table)
    ns = f"n{uuid.uuid4().hex[:8]}"
    filler.fill(0)
    _assert_full(_post(url, f"/v1/namespace/{ns}/create"))
    _assert_full(_post(url, f"/v1/table/{table}/insert", data=stream_bytes(wide_table(0, 10))))
    _assert_full(_post(url, f"/v1/table/{table}/tags/create", {"tag": "t", "version": 1}))
    other = table.replace("$t", "$other")
    _assert_full(_post(url, f"/v1/table/{other}/create", data=stream_bytes(wide_table(0, 10))))
    assert _post(url, f"/v1/namespace/{ns}/exists").status_code == 404
    assert _post(url, f"/v1/table/{other}/exists").status_code == 404
    assert _state(url, table) == before
    filler.free()
    assert _post(url, f"/v1/namespace/{ns}/create").status_code == 200
    assert _post(url, f"/v1/table/{table}/tags/create",
                 {"tag": "t", "version": 1}).status_code == 200
    made = _post(url, f"/v1/table/{other}/create", data=stream_bytes(wide_table(0, 10)))
    assert made.status_code == 200, made.text
