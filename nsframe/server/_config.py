"""Server configuration: storage roots, credentials and limits."""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsframe._protocol.defaults import DEFAULT_ROOT
from nsframe.server._limits import Limits

DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_ARROW_BYTES = 64 * 1024 * 1024 * 1024

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b?)\s*$", re.I)


def parse_size(text: str | int) -> int:
    """Bytes from ``1048576``, ``512KiB``, ``16MiB``, ``64G`` (binary units); >= 1."""
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a size: write bytes, or a number with KiB/MiB/GiB")
        power = " kmgt".index(match.group(2).lower() or " ")
        value = int(match.group(1)) * 1024**power
    if value < 1:
        raise ValueError(f"A size limit must be at least 1 byte, got {text!r}")
    return value


def _option_text(value: object) -> str:
    """A storage option's value as Lance and obstore take it: ``true``/``false`` for bools."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_credentials(value: object) -> dict[str, dict[str, Any]]:
    """``{secret: scope}``; a bare list of secrets gets full access each."""
    if isinstance(value, dict):
        return {str(k): dict(v or {}) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        raise TypeError("Give credentials as a list or a dict of secrets, not a single string")
    if isinstance(value, Iterable):
        return {str(k): {} for k in value}
    raise TypeError(f"Credentials must be a list or a dict, got {type(value).__name__}")


@dataclass
class ServerConfig:
    """Everything `create_app` needs.

    ``root`` is the default database: a local folder, or an ``s3://``, ``s3+ddb://``,
    ``gs://`` or ``az://`` URI. ``databases`` maps extra database names (picked by the
    ``x-service-database`` header, or by the host name) to their own roots; no root may
    be, or lie inside, another (`create_app` refuses to start).
    ``storage_options`` reach every root's store (credentials, endpoint, region; Lance's
    option names), on top of the store's standard environment variables.
    ``read_consistency_interval`` (seconds, 0 = strong) is how stale a read may be;
    ``vend_storage_options`` makes ``describe`` return the storage options a reader of
    the table's location needs; ``check_conditional_put`` (default on) refuses a store
    that does not honour create-if-absent writes.
    ``api_keys`` / ``tokens`` are accepted credentials, each mapped to its scope
    (``{"read_only": bool, "namespace": "a$b", "databases": [...], "name": "for logs"}``,
    all optional; a plain list of secrets means full access). ``jwt`` holds the settings
    of `_jwt.JWTVerifier` for OAuth 2.0 access tokens. With no credentials configured and
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
    # The token an embedded server generated for itself (see `embedded`).
    own_token: str | None = None
    # Browser safety (`_security.browser`): host names the Host header may carry besides
    # the loopback ones (``*.example.com`` matches subdomains, ``*`` any), and the web
    # origins allowed to call (``https://app.example.com``); any other Origin is refused.
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    storage_options: dict[str, str] = field(default_factory=dict)
    read_consistency_interval: float = 0.0
    vend_storage_options: bool = False
    check_conditional_put: bool = True
    # How `nsframe serve` prints its log lines: "text" or "json" (`_logs`).
    log_format: str = "text"

    def __post_init__(self) -> None:
        if self.log_format not in ("text", "json"):
            raise ValueError(f"log_format is 'text' or 'json', got {self.log_format!r}")
        self.storage_options = {str(k): _option_text(v) for k, v in
                                dict(self.storage_options or {}).items()}
        self.read_consistency_interval = float(self.read_consistency_interval)
        if self.read_consistency_interval < 0:
            raise ValueError("read_consistency_interval is a number of seconds >= 0")
        self.api_keys = _as_credentials(self.api_keys)
        self.tokens = _as_credentials(self.tokens)
        self.max_json_bytes = parse_size(self.max_json_bytes)
        self.max_arrow_bytes = parse_size(self.max_arrow_bytes)
        if isinstance(self.limits, dict):
            self.limits = Limits.from_mapping(self.limits, "limits")

    @classmethod
    def build(cls, root: str | os.PathLike[str] | None = None, **options: Any) -> ServerConfig:
        """A config for ``root`` (default ./nsframe-data) plus any other fields."""
        config = cls(**options)
        if root is not None:
            config.root = root
        return config

    @classmethod
    def embedded(cls, root: str | os.PathLike[str] | None = None, **options: Any) -> ServerConfig:
        """A config that accepts only a freshly generated bearer token (``own_token``),
        so other local users cannot reach an embedded server's data."""
        return cls.build(root, **options).with_token(secrets.token_urlsafe(32))

    def with_token(self, token: str) -> ServerConfig:
        """A copy that also accepts ``token`` as a full-access bearer token."""
        if len(token) < 16:
            raise ValueError("A server token must be at least 16 characters long")
        tokens = {**self.tokens, token: {"name": "embedded"}}
        return dataclasses.replace(self, tokens=tokens, own_token=token)

    @property
    def credentials_configured(self) -> bool:
        """True when the server checks credentials on every request."""
        return bool(self.api_keys or self.tokens or self.jwt or self.require_auth)

    @property
    def root_path(self) -> Path:
        """The root as a local path; a ValueError for an object-store root."""
        text = os.fspath(self.root)
        if "://" in text and not text.startswith("file://"):
            raise ValueError(f"The root {text} is not a local folder")
        return Path(text.removeprefix("file://"))

    def __repr__(self) -> str:
        # Keys, tokens and storage options are secrets: show how many, or their names,
        # never their values.
        return (
            f"ServerConfig(root={os.fspath(self.root)!r}, databases={sorted(self.databases)!r}, "
            f"api_keys=<{len(self.api_keys)} configured>, tokens=<{len(self.tokens)} configured>, "
            f"jwt={'<configured>' if self.jwt else None}, require_auth={self.require_auth}, "
            f"max_json_bytes={self.max_json_bytes}, max_arrow_bytes={self.max_arrow_bytes}, "
            f"allow_hosts={self.allow_hosts!r}, allow_origins={self.allow_origins!r}, "
            f"limits={self.limits!r}, "
            f"storage_options=<{', '.join(sorted(self.storage_options)) or 'none'}>, "
            f"read_consistency_interval={self.read_consistency_interval}, "
            f"vend_storage_options={self.vend_storage_options}, "
            f"check_conditional_put={self.check_conditional_put}, "
            f"log_format={self.log_format!r})"
        )
