"""The nsframe REST service: the Namespace and Table interface over Lance datasets.

This is the only part of nsframe that imports starlette, uvicorn and pylance; the
client never imports it.
"""

from __future__ import annotations

from nsframe.server._app import create_app
from nsframe.server._background import RunningServer, serve_in_thread
from nsframe.server._config import ServerConfig
from nsframe.server._storage.maintenance import collect_garbage
from nsframe.server._storage.objects import StoreCheckError

__all__ = [
    "RunningServer",
    "ServerConfig",
    "StoreCheckError",
    "collect_garbage",
    "create_app",
    "serve_in_thread",
]
