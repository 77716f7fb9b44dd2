"""Server configuration: storage roots, credentials and limits."""

from __future__ import annotations

import dataclasses
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsframe._protocol.defaults import DEFAULT_ROOT
from nsframe._protocol.routes import DEFAULT_PORT
from nsframe.server._limits import Limits
from nsframe.server._settings import (
    Credentials,
    Flag,
    Names,
    Number,
    Pairs,
    Size,
    Table,
    Text,
    check_fields,
    masked_repr,
    setting,
)

DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_ARROW_BYTES = 64 * 1024 * 1024 * 1024
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("text", "json")


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

    # Each field made with `setting()` is a setting of `nsframe serve`: its flag, its
    # NSFRAME_* variable, its config file key, --print-config, the repr and the table
    # of docs/operations.md all derive from it (`_settings`, `_config_file`).
    root: str | os.PathLike[str] = setting(
        DEFAULT_ROOT, kind=Text(path=True, metavar="PATH"),
        help="the default database's storage root: a folder, or an s3://, s3+ddb://, "
             "gs:// or az:// URI (also `nsframe serve ROOT`)")
    databases: dict[str, str | os.PathLike[str]] = setting(
        factory=dict, kind=Pairs(path=True, metavar="NAME=PATH"), flag="--database",
        help="more databases, picked by x-service-database or the host name, each with "
             "its own root")
    database_from_host: bool = setting(
        False, kind=Flag(),
        help="without x-service-database, the first label of the host name picks the "
             "database")
    api_keys: dict[str, dict[str, Any]] = setting(
        factory=dict, kind=Credentials("key", "api key", "KEY"), secret=True,
        flag="--api-key",
        help="accepted API keys, full access; the file's [[api_keys]] entries may scope them")
    tokens: dict[str, dict[str, Any]] = setting(
        factory=dict, kind=Credentials("token", "token", "TOKEN"), secret=True,
        flag="--token",
        help="accepted static bearer tokens, full access; the file's [[tokens]] may scope "
             "them")
    jwt: dict[str, Any] | None = setting(
        None, kind=Table(secrets=("secret",), paths=("public_key_file",)), secret=True,
        help="OAuth 2.0 access tokens: audience, issuer, and one of secret, public_key or "
             "public_key_file (docs/server.md)")
    require_auth: bool = setting(
        False, kind=Flag(),
        help="answer 401 to everything until credentials are configured")
    max_json_bytes: int = setting(
        DEFAULT_MAX_JSON_BYTES, kind=Size(),
        help="the largest JSON request body")
    max_arrow_bytes: int = setting(
        DEFAULT_MAX_ARROW_BYTES, kind=Size(), name="max_body_bytes",
        aliases=("max_arrow_bytes",),
        help="the largest Arrow insert body")
    # The token an embedded server generated for itself (see `embedded`): not a setting.
    own_token: str | None = None
    # Browser safety (`_security.browser`): host names the Host header may carry besides
    # the loopback ones (``*.example.com`` matches subdomains, ``*`` any), and the web
    # origins allowed to call (``https://app.example.com``); any other Origin is refused.
    allow_hosts: list[str] = setting(
        factory=list, kind=Names(), flag="--allow-host",
        help="host names requests may carry besides the loopback ones and --host "
             "(`*.example.com`: its subdomains; `*`: any)")
    allow_origins: list[str] = setting(
        factory=list, kind=Names("ORIGIN"), flag="--allow-origin",
        help="web origins (https://app.example.com) allowed to call the server, with CORS")
    # Not a setting itself: each of its fields is, under [limits] in the file.
    limits: Limits = field(default_factory=Limits)
    storage_options: dict[str, str] = setting(
        factory=dict, kind=Pairs(indirect=True, secret_values=True, metavar="KEY=VALUE"),
        secret=True, flag="--storage-option",
        help="options of an object-store root in Lance's names (aws_region, aws_endpoint, "
             "allow_http, ...), over the store's own AWS_*/GOOGLE_*/AZURE_* variables; "
             "in the file, NAME_env = \"VAR\" reads a variable")
    read_consistency_interval: float = setting(
        0.0, kind=Number(float, minimum=0, metavar="SECONDS"),
        help="how stale, in seconds, a read may be (0: every read sees every acknowledged "
             "commit of every replica)")
    vend_storage_options: bool = setting(
        False, kind=Flag(),
        help="describe returns the storage options a reader of the table's location needs")
    check_conditional_put: bool = setting(
        True, kind=Flag(),
        help="refuse to start on a store that ignores If-None-Match (off is UNSAFE)")
    # GET /metrics (`_http.metrics`; docs/operations.md, Metrics).
    metrics: bool = setting(
        True, kind=Flag(), help="serve GET /metrics, in Prometheus text format")
    metrics_require_auth: bool = setting(
        False, kind=Flag(), help="GET /metrics needs one of the server's credentials")
    metrics_table_labels: bool = setting(
        False, kind=Flag(),
        help="also count requests by table name on /metrics (one series per table: mind "
             "the number of tables)")
    # How `nsframe serve` runs; `create_app` does not read these.
    host: str = setting(
        "127.0.0.1", kind=Text(metavar="ADDRESS"),
        help="the address to bind; any but a loopback one needs credentials")
    port: int = setting(
        DEFAULT_PORT, kind=Number(int, minimum=0, maximum=65535, metavar="PORT"),
        help="the port to bind")
    workers: int = setting(
        1, kind=Number(int, minimum=1, metavar="N"),
        help="server processes sharing the port, under a supervisor that restarts one "
             "that crashes")
    log_level: str = setting(
        "info", kind=Text(choices=LOG_LEVELS, metavar="LEVEL"),
        help="info logs every request; " + ", ".join(LOG_LEVELS))
    log_format: str = setting(
        "text", kind=Text(choices=LOG_FORMATS, metavar="FORMAT"),
        help="log lines as text, or as one JSON object each; both name the request id")
    # Shutdown (docs/operations.md, Shutdown): on SIGTERM readiness answers 503 at once;
    # new requests are still served for `drain_delay` seconds (the time a load balancer
    # takes to notice), then requests in flight get `graceful_timeout` seconds to finish
    # before the catalogs are closed and the process exits.
    drain_delay: float = setting(
        0.0, kind=Number(float, minimum=0, metavar="SECONDS"),
        help="on SIGTERM, answer /readyz with 503 and keep serving this long before "
             "draining, so that a load balancer notices")
    graceful_timeout: float = setting(
        30.0, kind=Number(float, minimum=0, metavar="SECONDS"),
        help="then give requests in flight this long to finish before the server exits")

    def __post_init__(self) -> None:
        if isinstance(self.limits, dict):
            self.limits = Limits.from_mapping(self.limits, "limits")
        check_fields(self)

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
        # never their values (each kind masks its own).
        return masked_repr(self, [("limits", repr(self.limits))])
