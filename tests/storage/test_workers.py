"""`nsframe serve --workers N`: several processes behind one port, every answer as fresh
as a single process's (each worker resolves every request through the shared root)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from ._rest import Api, rows
from ._servers import ServerProcess


def test_workers_share_the_port_and_see_every_acknowledged_write(tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "root"), tmp_path, "workers",
                           extra_args=["--workers", "2"])
    server.start()
    try:
        assert server.proc is not None
        workers = psutil.Process(server.proc.pid).children(recursive=True)
        assert len([w for w in workers if "spawn_main" in " ".join(w.cmdline())]) == 2
        apis = [Api(server) for _ in range(4)]  # a connection each: the kernel spreads them
        assert apis[0].create_namespace("ns").status_code == 200
        assert apis[0].create("ns$t", rows(range(10))).status_code == 200
        total = 10
        for step in range(12):
            writer, reader = apis[step % 4], apis[(step + 1) % 4]
            first = 100 * (step + 1)
            assert writer.insert("ns$t", rows(range(first, first + 5))).status_code == 200
            total += 5
            # Acknowledged on one connection, counted on another: never a stale answer.
            assert reader.count("ns$t") == total
        assert not apis[0].server_errors
    finally:
        server.stop()


def test_a_root_the_server_refuses_stops_it_once_not_in_every_worker(tmp_path: Path) -> None:
    # The app is built in the parent first: a root that cannot be served ends start-up
    # with one message and status 2, rather than each worker failing (and being
    # restarted by uvicorn's supervisor).
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "nsframe._cli", "serve", str(not_a_folder), "--workers", "2",
         "--port", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("nsframe serve:") == 1
    assert str(not_a_folder) in done.stderr
