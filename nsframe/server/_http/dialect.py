"""LanceDB's remote protocol, told apart from the Lance Namespace protocol.

LanceDB's remote client (``lancedb.connect("db://...", host_override=...)``) speaks a
dialect of the namespace protocol (spec/UPSTREAM_NOTES.md section 7): the same routes, but
it ends every path with ``/``, sends ``x-lancedb-*`` headers and a ``LanceDB-...`` user
agent, and reads some answers its own way. A request is LanceDB's when its path ends
with a slash *and* it carries one of LanceDB's headers: no namespace client sends
either, and the contract's paths have no trailing slash, so the contract itself never
changes. What the dialect changes (docs/compatibility.md):

- describe writes the schema in Lance's JSON spelling (`schema_json.schema_to_lance_json`);
- ``tags/list`` answers a bare map of tags;
- ``GET /v1/table/`` lists the root namespace's tables, by name;
- creating a table that exists is a 400 saying "already exists" (LanceDB's sign for it);
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Scope

LANCEDB = "lancedb"
_SCOPE_KEY = "nsframe.dialect"
_HEADER_PREFIX = b"x-lancedb-"
_USER_AGENT_PREFIX = b"lancedb-"
# Every query answers the version its rows reflect (routes.READ_VERSION_HEADER, to any
# client). LanceDB's client then asks for at least that version
# (x-lancedb-min-read-version); with x-lancedb-min-version and x-lancedb-min-timestamp it
# asks that no read be older than a write or a checkout_latest() it saw. Every request
# here reads the newest manifest of its table (`DatasetCache.get`), so each of those
# holds without looking at the headers.


def mark(scope: Scope, had_trailing_slash: bool) -> None:
    """Record the request's dialect in ``scope`` (called before the slash is stripped)."""
    if had_trailing_slash and _has_lancedb_headers(scope):
        scope[_SCOPE_KEY] = LANCEDB


def _has_lancedb_headers(scope: Scope) -> bool:
    for name, value in scope.get("headers") or ():
        if name.startswith(_HEADER_PREFIX):
            return True
        if name == b"user-agent" and value.lower().startswith(_USER_AGENT_PREFIX):
            return True
    return False


def is_lancedb(request: Request) -> bool:
    return request.scope.get(_SCOPE_KEY) == LANCEDB

