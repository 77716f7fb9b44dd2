"""`nsframe serve --workers N`: several processes behind one port, every answer as fresh
as a single process's (each worker resolves every request through the shared root)."""

from __future__ import annotations

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
