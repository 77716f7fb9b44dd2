"""`serve_in_thread`: the real server on a loopback port, in a background thread."""

from __future__ import annotations

import dataclasses
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from nsframe.server._app import create_app
from nsframe.server._config import ServerConfig

# Seconds past the graceful timeout for the server thread to end its lifespan and loop.
STOP_MARGIN = 5.0


@dataclass(frozen=True)
class RunningServer:
    """Where a server started by `serve_in_thread` listens."""

    url: str
    host: str
    port: int
    config: ServerConfig
    # The bearer token clients must send, when the server generated one (never in repr).
    token: str | None = field(default=None, repr=False)
    # The ASGI app the server runs: the embedded client calls it in process.
    app: Any = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return self.url


@contextmanager
def serve_in_thread(
    root: str | os.PathLike[str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: ServerConfig | None = None,
    log_level: str = "warning",
    startup_timeout: float = 30.0,
    token: str | None = None,
    **options: Any,
) -> Iterator[RunningServer]:
    """Run the REST service in a daemon thread for the duration of the ``with`` block.

    ``port=0`` takes an ephemeral port; the socket is bound before the server starts,
    so the URL is known at once. Used alike by tests, notebooks and ``connect()``.

    ``token="generate"`` makes the server accept only a fresh random bearer token (or
    any other API credentials configured), exposed as ``RunningServer.token``; any
    other string is used as that token. A config from `ServerConfig.embedded` does the
    same.

    Example:
        >>> with serve_in_thread("./data", token="generate") as server:
        ...     client = nsframe.connect(server.url, token=server.token)
        ...     _ = client.create_table("items", {"id": [1, 2]})
        ...     print(client.table_names())
        ...     client.close()
        ['items']
    """
    if config is None:
        config = ServerConfig.build(root, **options)
    if token is not None:
        config = config.with_token(secrets.token_urlsafe(32) if token == "generate" else token)
    if host not in config.allow_hosts:
        # The bound address is a name the server answers to (see `_security.browser`).
        config = dataclasses.replace(config, allow_hosts=[*config.allow_hosts, host])
    app = create_app(config=config)
    sock: socket.socket | None = None
    server: uvicorn.Server | None = None
    thread: threading.Thread | None = None
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not the default 0: asyncio turns on TCP_NODELAY only for sockets that
        # say they are TCP, and without it every JSON answer waits ~40 ms (Nagle + delayed ACK).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        bound_port = sock.getsockname()[1]
        # Lifespan off: the catalogs are closed below, after the thread has stopped.
        # (uvicorn types the graceful timeout int; it is asyncio.wait_for's, a float.)
        server = uvicorn.Server(
            uvicorn.Config(app, log_level=log_level, lifespan="off", access_log=False,
                           timeout_graceful_shutdown=config.graceful_timeout)  # type: ignore[arg-type]
        )
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="nsframe-server"
        )
        thread.start()
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(
                    "The nsframe server thread stopped during start-up; see its log.")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"The nsframe server did not start within {startup_timeout}s.")
            time.sleep(0.01)
        url_host = f"[{host}]" if ":" in host else host
        yield RunningServer(
            f"http://{url_host}:{bound_port}", host, bound_port, config, config.own_token, app
        )
    finally:
        # As `nsframe serve` stops on SIGTERM: readiness first, then the drain, then the
        # catalogs (their lease threads and server records).
        app.lifecycle.drain()
        if server is not None:
            if server.started and config.drain_delay:
                time.sleep(config.drain_delay)
            server.should_exit = True
            if thread is not None and thread.is_alive():
                thread.join(timeout=config.graceful_timeout + STOP_MARGIN)
        app.lifecycle.close()
        if sock is not None:
            sock.close()
