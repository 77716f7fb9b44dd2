"""Server configuration: storage roots, credentials and limits."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_ROOT = "./nsframe-data"
DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_ARROW_BYTES = 64 * 1024 * 1024 * 1024


@dataclass
class ServerConfig:
    """Everything `create_app` needs.

    ``root`` is the default database. ``databases`` maps extra database names (picked by
    the ``x-service-database`` header, or by the host name) to their own roots.
    ``api_keys`` / ``tokens`` are accepted credentials; with none configured and
    ``require_auth`` false, the server accepts every request (loopback development).
    """

    root: str | os.PathLike[str] = DEFAULT_ROOT
    databases: dict[str, str | os.PathLike[str]] = field(default_factory=dict)
    database_from_host: bool = False
    api_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    jwt: dict[str, Any] | None = None
    require_auth: bool = False
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES
    max_arrow_bytes: int = DEFAULT_MAX_ARROW_BYTES

    @classmethod
    def build(cls, root: str | os.PathLike[str] | None = None, **options: Any) -> ServerConfig:
        """A config for ``root`` (default ./nsframe-data) plus any other fields."""
        config = cls(**options)
        if root is not None:
            config.root = root
        return config

    @property
    def root_path(self) -> Path:
        return Path(os.fspath(self.root))

    def __repr__(self) -> str:
        # Keys and tokens are secrets: show how many, never which.
        return (
            f"ServerConfig(root={os.fspath(self.root)!r}, databases={sorted(self.databases)!r}, "
            f"api_keys=<{len(self.api_keys)} configured>, tokens=<{len(self.tokens)} configured>, "
            f"jwt={'<configured>' if self.jwt else None}, require_auth={self.require_auth})"
        )
