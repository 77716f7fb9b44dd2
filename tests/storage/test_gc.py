"""`nsframe gc ROOT`: a dry run by default, and never a byte of committed data.

The leftovers are the ones a crash makes (see docs/storage.md): an unreachable namespace
incarnation, a data folder no table files, a data file of a write whose server is gone,
and a write record of that server. Each is made here by hand, so that the test knows
exactly what must go and what must stay.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import requests

from nsframe.server import serve_in_thread
from nsframe.server._storage.leases import LEASE_ENV
from tests.support import ARROW_HEADERS, ipc_stream
from tests.support.s3 import S3Endpoint

from ._servers import REPO, ServerProcess

DAY = 24 * 3600.0


def _gc(root: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "nsframe._cli", "gc", str(root), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _age(path: Path, seconds: float) -> None:
    """Make every file below ``path`` look ``seconds`` old."""
    stamp = time.time() - seconds
    for folder, _, files in os.walk(path):
        for name in files:
            os.utime(Path(folder, name), (stamp, stamp))


def _all_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and "_nsframe" not in p.parts}


def test_gc_finds_what_crashes_leave_and_keeps_every_version(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with serve_in_thread(root) as server, requests.Session() as http:
        url = server.url
        assert http.post(f"{url}/v1/namespace/keep/create", json={}).status_code == 200
        assert http.post(f"{url}/v1/namespace/doomed/create", json={}).status_code == 200
        for ns in ("keep", "doomed"):
            made = http.post(f"{url}/v1/table/{ns}$t/create",
                             data=ipc_stream({"id": [1, 2, 3]}), headers=ARROW_HEADERS)
            assert made.status_code == 200, made.text
        more = http.post(f"{url}/v1/table/keep$t/insert", data=ipc_stream({"id": [4]}),
                         headers=ARROW_HEADERS)
        assert more.json()["version"] == 2
        location = Path(http.post(f"{url}/v1/table/keep$t/describe", json={})
                        .json()["location"])
        doomed = Path(http.post(f"{url}/v1/table/doomed$t/describe", json={})
                      .json()["location"])

    # 1. A data folder whose create never reached the catalog.
    orphan = root / "tables" / "orphan-0123456789abcdef.lance"
    shutil.copytree(location, orphan)
    _age(orphan, DAY)
    # 2. A namespace whose drop was written but whose contents were not deleted: its
    # entry says "dropped", its child entries and its table's data are still there.
    entry = root / "_catalog" / "root" / "ns" / "doomed"
    newest = max(entry.iterdir())
    body = json.loads(newest.read_text())
    dropped = {**body, "state": "dropped", "at": time.time()}
    (entry / f"{int(newest.stem) + 1:020d}.json").write_text(json.dumps(dropped))
    uid = body["uid"]
    # 3. An insert killed after it wrote a data file, by a server that is gone.
    writes = root / "_nsframe" / "writes"
    writes.mkdir(parents=True, exist_ok=True)
    record = writes / "dead-server-1.json"
    key = str(location.relative_to(root))
    record.write_text(json.dumps({"server": "dead-server", "location": key,
                                  "started": time.time()}))
    time.sleep(0.05)
    stray = location / "data" / "killed-insert.lance"
    shutil.copy(next((location / "data").iterdir()), stray)
    committed = _all_files(root) - {str(p.relative_to(root)) for p in
                                    [*orphan.rglob("*"), *doomed.rglob("*"),
                                     *(root / "_catalog" / uid).rglob("*"), stray]}

    dry = _gc(root)
    assert f"would remove folder tables/{orphan.name}/" in dry, dry
    assert f"would remove folder tables/{doomed.name}/" in dry, dry
    assert f"would remove folder _catalog/{uid}/" in dry, dry
    assert f"would remove file {key}/data/killed-insert.lance" in dry, dry
    assert "would remove file _nsframe/writes/dead-server-1.json" in dry, dry
    assert "--apply" in dry
    assert orphan.exists() and stray.exists() and record.exists()  # a dry run removes nothing

    applied = _gc(root, "--apply")
    assert "removed folder" in applied
    assert not orphan.exists() and not doomed.exists() and not stray.exists()
    assert not record.exists() and not (root / "_catalog" / uid).exists()
    assert committed <= _all_files(root), committed - _all_files(root)
    # Every version of the live table still reads, with its exact rows.
    ds = lance.dataset(str(location))
    assert ds.to_table().column("id").to_pylist() == [1, 2, 3, 4]
    assert ds.checkout_version(1).to_table() == pa.table({"id": [1, 2, 3]})
    assert "would remove 0 folder(s) and 0 file(s)" in _gc(root)


def test_gc_removes_the_records_of_servers_dead_longer_than_their_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_under_test: Path) -> None:
    """A killed server's record (and a clock file it left) goes once its lease has run
    out; a live server's record, and a dead one still within its lease, stay."""
    root = tmp_path / "root"
    servers = root / "_nsframe" / "servers"
    # Short leases, so that a record expires within the test; the live server renews.
    monkeypatch.setenv(LEASE_ENV, "2")
    with serve_in_thread(root) as server:
        live = {p.name for p in servers.iterdir()}
        doomed = ServerProcess(str(root), tmp_path / "logs", "doomed",
                               env={LEASE_ENV: "2"})
        doomed.start()
        dead = {p.name for p in servers.iterdir()} - live
        assert len(dead) == 1, dead
        doomed.kill()
        (servers / next(iter(dead))).with_suffix(".clock").write_bytes(b"")
        # A server on this host, gone, whose lease has not run out yet.
        recent = servers / "recently-dead.json"
        recent.write_text(json.dumps({"host": socket.gethostname(), "pid": _dead_pid(),
                                      "renewed": time.time(), "lease": 3600.0}))
        time.sleep(2.5)  # past the killed server's lease

        dry = _gc(root)
        name = next(iter(dead))
        assert f"would remove file _nsframe/servers/{name}" in dry, dry
        assert f"would remove file _nsframe/servers/{name.removesuffix('.json')}.clock" in dry
        _gc(root, "--apply")
        left = {p.name for p in servers.iterdir()}
        assert live <= left, "a live server's record was removed"
        assert recent.name in left, "a record within its lease was removed"
        assert not left & dead and not any(p.endswith(".clock") for p in left), left
        made = requests.post(f"{server.url}/v1/namespace/after/create", json={}, timeout=30)
        assert made.status_code == 200, made.text


def _dead_pid() -> int:
    """The pid of a process that has exited."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_process_that_died_unreaped_is_not_alive() -> None:
    """A worker killed with its supervisor is reparented and may stay a zombie for a
    while: it answers signal 0, but its writes are over and start-up may collect them."""
    import subprocess
    import sys
    import time

    from nsframe.server._storage import leases

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while not leases._zombie(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # exited, not yet waited for: a zombie
    try:
        assert leases._zombie(child.pid)
        assert not leases.pid_alive(child.pid)
        assert leases.pid_alive(os.getpid())
    finally:
        child.wait()


def test_start_up_collects_beside_serving_and_a_stopped_collection_removes_nothing(
        tmp_path: Path, code_under_test: Path) -> None:
    """Start-up collection runs in a thread while the server answers (a root of 10,000
    tables takes minutes: benchmarks/bench_startup.py); stopped before it finished, as at
    shutdown, it removes nothing, and the next start collects."""
    from nsframe.server._storage.catalog import Catalog
    from nsframe.server._storage.startup import StartupCollection

    root = tmp_path / "root"
    with serve_in_thread(root) as server:
        made = requests.post(f"{server.url}/v1/namespace/n/create", json={}, timeout=30)
        assert made.status_code == 200, made.text
    orphan = root / "tables" / "orphan-0123456789abcdef.lance"
    (orphan / "data").mkdir(parents=True)
    (orphan / "data" / "x.lance").write_bytes(b"left by a crash")
    _age(orphan, DAY)

    catalog = Catalog(root)
    stopped = StartupCollection([catalog], close_when_done=True)
    stopped.stop()  # before it began: it stops at its first table
    stopped.start()
    assert stopped.finished.wait(60)
    assert orphan.exists(), "a stopped collection removed something"
    # It closed the catalog it was given: the record of its lease is gone.
    assert not (root / "_nsframe" / "servers" / f"{catalog.leases.server_id}.json").exists()

    server = ServerProcess(str(root), tmp_path / "logs", "collects")
    server.start()
    try:
        deadline = time.monotonic() + 60
        while orphan.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not orphan.exists(), server.log_tail()
        log = server.log_tail(200)
        assert "start-up collection of" in log and "finished in" in log, log
    finally:
        server.stop()


@pytest.mark.parametrize("store", ["local", "s3"])
def test_a_collection_keeps_what_was_created_while_it_ran(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """A collection runs beside serving (start-up's, or another replica's): a namespace
    and a table created after it listed what is reachable are not garbage. (A namespace's
    folder made meanwhile used to be removed, and its new table was then a 404.)"""
    from nsframe.server._storage import gc
    from nsframe.server._storage.catalog import Catalog

    root: Path | str = tmp_path / "root"
    options: dict[str, str] = {}
    if store == "s3":  # whole-second timestamps: made after `started`, stamped before it
        s3: S3Endpoint = request.getfixturevalue("s3")
        root, options = s3.new_root("late"), s3.options()
    with serve_in_thread(root, storage_options=options) as server, \
            requests.Session() as http:
        reachable = gc._reachable
        catalog = Catalog(root, storage_options=options)

        def then_create(some: Catalog) -> tuple[set[str], set[str]]:
            found = reachable(some)
            if some is not catalog:  # the server's own start-up collection
                return found
            assert http.post(f"{server.url}/v1/namespace/late/create", json={}).ok
            made = http.post(f"{server.url}/v1/table/late$t/create",
                             data=ipc_stream({"id": [1, 2]}), headers=ARROW_HEADERS)
            assert made.status_code == 200, made.text
            return found

        monkeypatch.setattr(gc, "_reachable", then_create)
        try:
            garbage = gc.collect(catalog, dry_run=False)
        finally:
            catalog.close()
        assert garbage.folders == [] and garbage.keys == [], garbage.lines()
        counted = http.post(f"{server.url}/v1/table/late$t/count_rows", json={})
        assert (counted.status_code, counted.text) == (200, "2")
