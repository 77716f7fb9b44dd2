"""Credentials and database selection (placeholder: everything is allowed for now)."""

from __future__ import annotations

from starlette.types import ASGIApp

from nsframe.server._config import ServerConfig


def wrap(app: ASGIApp, config: ServerConfig) -> ASGIApp:
    return app
