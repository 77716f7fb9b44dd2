"""`nsframe serve --workers N`: several server processes on one listening socket.

The storage layer is correct with any number of processes on one root (docs/storage.md),
so throughput under concurrent clients can grow past one process's GIL. uvicorn's own
supervisor starts the workers; each builds its app from the config in the child
(`create_app` is the factory), so nothing opened in the parent (datasets, leases, the
start-up collection) is ever shared across a fork.
"""

from __future__ import annotations

import functools

import uvicorn
from uvicorn.supervisors import Multiprocess

from nsframe.server._app import create_app
from nsframe.server._config import ServerConfig


def serve_workers(config: ServerConfig, *, host: str, port: int, workers: int,
                  log_level: str) -> None:
    """Serve ``config`` with ``workers`` processes until stopped (SIGINT or SIGTERM)."""
    # uvicorn.run() insists on an import string for workers, only so that it can spawn
    # them; a picklable factory does the same without exposing the config (its secrets)
    # through the environment or a file: it travels over the spawn pipe.
    app = functools.partial(create_app, config=config)
    settings = uvicorn.Config(app, factory=True, host=host, port=port, workers=workers,
                              log_level=log_level, access_log=False)
    Multiprocess(settings, sockets=[settings.bind_socket()]).run()
