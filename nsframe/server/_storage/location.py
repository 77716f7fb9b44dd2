"""Storage roots: a local folder or an object-store URI, and the options that reach it.

One set of *storage options* (Lance's names: ``aws_access_key_id``, ``aws_endpoint``,
``allow_http``, ``google_service_account``, ``azure_storage_account_key`` ...) serves
every consumer of a root: Lance opens tables with it, the catalog's obstore store is
built from it, an ``s3+ddb://`` root's DynamoDB client too, and ``describe`` may vend
it to readers. It comes from, lowest priority first, the standard environment
variables of the store, the config file and ``nsframe serve`` flags.

Credentials never travel in a root URI: a URI with user info or with query parameters
other than ``ddbTableName`` is refused, because roots are printed and logged.

No two databases of one server may share storage: `overlapping_roots` finds two roots one
of which is, or lies inside, the other (docs/storage.md, Ownership).
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsframe.server._storage import redact

# scheme -> the provider whose options apply ("" is a local folder)
PROVIDERS = {"": "", "file": "", "s3": "aws", "s3a": "aws", "s3+ddb": "aws", "gs": "google",
             "gcs": "google", "az": "azure", "abfs": "azure", "abfss": "azure"}
DDB_SCHEME = "s3+ddb"
DDB_TABLE = "ddbTableName"

# The standard variables of each store, as option names. Earlier variables win.
ENVIRONMENT: dict[str, list[tuple[str, str]]] = {
    "aws": [
        ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
        ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
        ("AWS_SESSION_TOKEN", "aws_session_token"),
        ("AWS_REGION", "aws_region"),
        ("AWS_DEFAULT_REGION", "aws_region"),
        ("AWS_ENDPOINT_URL_S3", "aws_endpoint"),
        ("AWS_ENDPOINT_URL", "aws_endpoint"),
        ("AWS_ENDPOINT", "aws_endpoint"),
        ("AWS_ALLOW_HTTP", "allow_http"),
        ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "aws_virtual_hosted_style_request"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "dynamodb_endpoint"),
        ("DYNAMODB_ENDPOINT", "dynamodb_endpoint"),
    ],
    "google": [
        ("GOOGLE_SERVICE_ACCOUNT", "google_service_account"),
        ("GOOGLE_SERVICE_ACCOUNT_PATH", "google_service_account"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "google_service_account"),
        ("GOOGLE_SERVICE_ACCOUNT_KEY", "google_service_account_key"),
    ],
    "azure": [
        ("AZURE_STORAGE_ACCOUNT_NAME", "azure_storage_account_name"),
        ("AZURE_STORAGE_ACCOUNT_KEY", "azure_storage_account_key"),
        ("AZURE_STORAGE_SAS_TOKEN", "azure_storage_sas_key"),
        ("AZURE_STORAGE_TOKEN", "azure_storage_token"),
        ("AZURE_STORAGE_CLIENT_ID", "azure_storage_client_id"),
        ("AZURE_CLIENT_ID", "azure_storage_client_id"),
        ("AZURE_STORAGE_CLIENT_SECRET", "azure_storage_client_secret"),
        ("AZURE_CLIENT_SECRET", "azure_storage_client_secret"),
        ("AZURE_STORAGE_TENANT_ID", "azure_storage_tenant_id"),
        ("AZURE_TENANT_ID", "azure_storage_tenant_id"),
        ("AZURE_STORAGE_ENDPOINT", "azure_storage_endpoint"),
        ("AZURE_STORAGE_USE_EMULATOR", "azure_storage_use_emulator"),
    ],
}

# Options of the HTTP client rather than of the store: obstore takes them apart.
CLIENT_OPTIONS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "http2_only", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "randomize_addresses",
    "timeout", "user_agent",
})
_BOOLEAN_CLIENT_OPTIONS = frozenset({"allow_http", "allow_invalid_certificates", "http1_only",
                                     "http2_only", "randomize_addresses"})
# Unprefixed names people write for the common options; Lance and obstore both take the
# prefixed ones.
_ALIASES = {
    "aws": {"access_key_id": "aws_access_key_id", "secret_access_key": "aws_secret_access_key",
            "session_token": "aws_session_token", "region": "aws_region",
            "endpoint": "aws_endpoint", "endpoint_url": "aws_endpoint",
            "aws_endpoint_url": "aws_endpoint"},
    "google": {"service_account": "google_service_account",
               "service_account_key": "google_service_account_key"},
    "azure": {"account_name": "azure_storage_account_name",
              "account_key": "azure_storage_account_key"},
}
# Name parts that mark an option's value as a secret: it is never printed or logged.
_SECRET_PARTS = ("secret", "token", "password", "sas", "account_key", "service_account_key",
                 "encryption_key", "customer_key")


def is_secret(option: str) -> bool:
    name = option.lower()
    return any(part in name for part in _SECRET_PARTS)


def options_from_env(scheme: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The storage options the standard environment variables of ``scheme``'s store set."""
    found: dict[str, str] = {}
    for variable, option in ENVIRONMENT.get(PROVIDERS.get(scheme, ""), []):
        value = environ.get(variable)
        if value and option not in found:
            found[option] = value
    return found


def normalize_options(scheme: str, options: Mapping[str, Any]) -> dict[str, str]:
    """Options with the store's prefixed names, lower case, values as strings."""
    aliases = _ALIASES.get(PROVIDERS.get(scheme, ""), {})
    out: dict[str, str] = {}
    for key, value in options.items():
        name = str(key).strip().lower()
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out[aliases.get(name, name)] = text
    return out


@dataclass(frozen=True)
class StorageRoot:
    """A root: ``uri`` as given (for Lance), ``base`` without its query, its options."""

    uri: str
    scheme: str
    base: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False)
    ddb_table: str | None = None

    @classmethod
    def parse(cls, root: str | os.PathLike[str], options: Mapping[str, Any] | None = None,
              environ: Mapping[str, str] | None = None) -> StorageRoot:
        """Check ``root`` and gather its options (``environ`` defaults to os.environ)."""
        text = os.fspath(root)
        parsed = urllib.parse.urlparse(text)
        scheme = parsed.scheme.lower()
        if scheme not in PROVIDERS or (len(scheme) == 1 and os.name == "nt"):
            if len(scheme) == 1 and os.name == "nt":
                scheme = ""
            else:
                raise ValueError(
                    f"Unsupported storage root scheme {parsed.scheme!r}: use a local folder, "
                    "file://, s3://, s3+ddb://, gs:// or az://"
                )
        if scheme in ("", "file"):
            local = urllib.parse.unquote(parsed.path) if scheme == "file" else text
            path = str(Path(local).expanduser().resolve())
            return cls(path, "", path, {})
        if parsed.username or parsed.password:
            raise ValueError("Put credentials in storage options (flags, config file or "
                             "environment), not in the root URI: roots are logged.")
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        ddb_table = None
        if scheme == DDB_SCHEME:
            tables = query.pop(DDB_TABLE, [])
            if len(tables) != 1 or not tables[0]:
                raise ValueError(f"An s3+ddb:// root names its DynamoDB commit table: "
                                 f"s3+ddb://bucket/path?{DDB_TABLE}=TABLE")
            ddb_table = tables[0]
        if query:
            raise ValueError(f"The root URI may not carry query parameters {sorted(query)}: "
                             "give storage options as options.")
        if not parsed.netloc:
            raise ValueError(f"The root {scheme}://... needs a bucket or container name.")
        base = urllib.parse.urlunparse(parsed._replace(query="")).rstrip("/")
        uri = base + (f"?{DDB_TABLE}={ddb_table}" if ddb_table else "")
        merged = {**options_from_env(scheme, os.environ if environ is None else environ),
                  **normalize_options(scheme, options or {})}
        redact.register(v for k, v in merged.items() if is_secret(k))
        return cls(uri, scheme, base, merged, ddb_table)

    @property
    def is_local(self) -> bool:
        return self.scheme == ""

    @property
    def provider(self) -> str:
        return PROVIDERS[self.scheme]

    def key_uri(self, key: str) -> str:
        """The URI (or path) of ``key`` below the root, as Lance opens it."""
        if self.is_local:
            return _local_path(self.base, key)
        where = f"{self.base}/{key}"
        return where + (f"?{DDB_TABLE}={self.ddb_table}" if self.ddb_table else "")

    def __str__(self) -> str:
        return self.uri

    # ----------------------------------------------------------------- consumers
    def lance_options(self) -> dict[str, str] | None:
        """The options for Lance (None on a local root)."""
        return dict(self.options) or None

    def store_url(self) -> str:
        """The URL obstore opens: an ``s3+ddb://`` root's bucket is a plain S3 bucket."""
        if self.scheme == DDB_SCHEME:
            return "s3" + self.base[len(DDB_SCHEME):]
        return self.base

    def obstore_options(self) -> tuple[dict[str, str], dict[str, Any]]:
        """``(config, client_options)`` for `obstore.store.from_url`: options of the
        store's provider only (Lance's own, such as ``dynamodb_endpoint``, are left out)."""
        prefix = f"{self.provider}_"
        config: dict[str, str] = {}
        client: dict[str, Any] = {}
        for key, value in self.options.items():
            if key in CLIENT_OPTIONS:
                client[key] = (value.strip().lower() in ("1", "true", "yes")
                               if key in _BOOLEAN_CLIENT_OPTIONS else value)
            elif key.startswith(prefix):
                config[key] = value
        return config, client


# ------------------------------------------------------------------------- ownership
# Schemes that name one namespace of buckets: an s3+ddb:// root is an s3:// bucket.
STORE_FAMILY = {"s3": "s3", "s3a": "s3", "s3+ddb": "s3", "gs": "gs", "gcs": "gs",
                 "az": "az", "abfs": "az", "abfss": "az"}


def relation(key: str, other: str) -> str | None:
    """How folder ``key`` stands to folder ``other`` (both keys or paths with "/"
    between segments): "same", "inside", "contains", or None when they are apart.
    Segments are compared whole: ``a/b`` is not inside ``a/bc``."""
    mine, theirs = _segments(key), _segments(other)
    if mine == theirs:
        return "same"
    if mine[:len(theirs)] == theirs:
        return "inside"
    if theirs[:len(mine)] == mine:
        return "contains"
    return None


def _segments(key: str) -> list[str]:
    return [part for part in key.split("/") if part not in ("", ".")]


def _place(root: str | os.PathLike[str]) -> tuple[str, str]:
    """Where ``root`` is: (the store, the folder in it), symlinks resolved on a local disk."""
    text = os.fspath(root)
    scheme = urllib.parse.urlparse(text).scheme.lower()
    family = STORE_FAMILY.get(scheme)
    if family is None:  # a local folder (StorageRoot.parse refuses unknown schemes later)
        local = urllib.parse.unquote(urllib.parse.urlparse(text).path) \
            if scheme == "file" else text
        return "", os.path.realpath(Path(local).expanduser())
    parsed = urllib.parse.urlparse(text)
    return f"{family}://{parsed.netloc}", parsed.path


def overlapping_roots(roots: Mapping[str, str | os.PathLike[str]]) -> str | None:
    """A one-line message naming two databases whose roots overlap, or None.

    ``roots`` maps database names ("" is the default database) to roots. Local roots are
    compared after resolving symlinks; object-store roots by bucket and key prefix, whole
    segments at a time and case-sensitively, as the store compares keys."""
    places = [(name, os.fspath(root), _place(root)) for name, root in roots.items()]
    for i, (name, root, (store, folder)) in enumerate(places):
        for other, other_root, (other_store, other_folder) in places[i + 1:]:
            how = relation(folder, other_folder) if store == other_store else None
            if how == "same":
                where = (f"{_label(name)} and {_label(other)} have the same root "
                         f"{root!r}")
            elif how is not None:
                (inner, at), (outer, around) = (name, root), (other, other_root)
                if how == "contains":
                    (inner, at), (outer, around) = (outer, around), (inner, at)
                where = (f"the root of {_label(inner)} ({at!r}) is inside the root of "
                         f"{_label(outer)} ({around!r})")
            else:
                continue
            return (f"Databases may not share storage: {where}. Give each database a "
                    "folder of its own, outside every other database's root.")
    return None


def _label(name: str) -> str:
    return "the default database" if name == "" else f"database {name!r}"


@functools.lru_cache(maxsize=4096)
def _local_path(base: str, key: str) -> str:
    """``key`` below the local root ``base``: the same few keys are asked for on every
    request, and building the `Path` costs more than the lookup it serves."""
    return str(Path(base, key))
