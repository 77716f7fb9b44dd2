"""Which database (storage root) a request addresses.

The ``x-service-database`` header names it; without the header, and with
``database_from_host``, the first label of the host name does (``sales.db.example.com``
is database ``sales``). Otherwise the request goes to the default root, whose name is
the empty string. LanceDB clients send ``x-lancedb-database`` with whatever name their
``db://`` URI holds, so that header picks a database only when it names one this server
has, and is ignored otherwise.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

from starlette.datastructures import Headers

from nsframe._protocol import routes
from nsframe.exceptions import NotFoundError
from nsframe.server._storage.catalog import Catalog

LANCEDB_DATABASE_HEADER = "x-lancedb-database"


def _host_label(host: str) -> str:
    """The database a Host header names, or "" for IP literals and one-label hosts."""
    if host.startswith("["):  # an IPv6 literal, with or without a port
        return ""
    hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    try:
        ipaddress.ip_address(hostname)
        return ""
    except ValueError:
        pass
    labels = hostname.split(".")
    return labels[0] if len(labels) >= 2 else ""


def database_name(headers: Headers, from_host: bool,
                  known: Collection[str]) -> tuple[str, str]:
    """The database name and where it came from ("header", "host" or "default")."""
    name = headers.get(routes.DATABASE_HEADER, "").strip()
    if name:
        return name, "header"
    lancedb_name = headers.get(LANCEDB_DATABASE_HEADER, "").strip()
    if lancedb_name and lancedb_name in known:
        return lancedb_name, "header"
    if from_host:
        label = _host_label(headers.get("host", ""))
        if label:
            return label, "host"
    return "", "default"


def resolve(catalogs: dict[str, Catalog], name: str, source: str) -> Catalog:
    """The catalog of database ``name``; 404 when this server has no such database."""
    catalog = catalogs.get(name)
    if catalog is None:
        where = "the x-service-database header" if source == "header" else "the host name"
        raise NotFoundError(
            f"There is no database {name!r} on this server: check {where}.", code=13
        )
    return catalog
