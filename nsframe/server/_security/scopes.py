"""What a credential may do: read-only or read-write, within a namespace prefix, on databases.

Every request is classified before it runs by the route that will answer it: each
route in the route table declares whether it reads or writes, and a request no route
answers runs nothing, so it needs no scope. The names a request's members hold (a
rename's target, say) are checked by `Scope.allow` once its model is decoded
(`_http.names`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams
from starlette.routing import Match
from starlette.types import Scope as ASGIScope

from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id, split_id
from nsframe.exceptions import ForbiddenError
from nsframe.server._http.ids import get_delimiter
from nsframe.server._http.names import Touch
from nsframe.server._http.routing import ApiRoute


@dataclass(frozen=True)
class Operation:
    """A request as scopes see it: read or write, and the identifier it addresses.

    ``ident`` is None when the request addresses no namespace or table (transactions,
    unknown paths); ``[]`` is the root namespace.
    """

    write: bool
    ident: list[str] | None
    delimiter: str = DEFAULT_DELIMITER

    @property
    def label(self) -> str:
        if self.ident is None:
            return "this operation"
        return join_id(self.ident, self.delimiter)


def classify(routes: Iterable[ApiRoute], scope: ASGIScope) -> Operation | None:
    """What the request does, read from the route that will answer it; None when no route
    answers it (the router's 404 or 405, which run nothing)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        # Parsed by the handlers' own function (Starlette: the last of repeated values
        # wins): a different reading would let `?delimiter=f&delimiter=$` pass the scope as
        # `sales` + `orce$t` and reach table `t` of namespace `salesforce`.
        delimiter = get_delimiter(QueryParams(scope.get("query_string", b"").decode("latin-1")))
        if not route.namespaced:
            return Operation(route.write, None, delimiter)
        params = child.get("path_params", {})
        raw = params.get("id", params.get("table_name"))
        if raw is None:
            return Operation(route.write, [], delimiter)
        return Operation(route.write, split_id(raw, delimiter), delimiter)
    return None


def _parts(value: object, what: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(value.split(DEFAULT_DELIMITER))
    if isinstance(value, (list, tuple)) and all(isinstance(p, str) and p for p in value):
        return tuple(value)
    raise ValueError(f"{what} must be a string like 'sales$eu' or a list of names, got {value!r}")


@dataclass(frozen=True)
class Scope:
    """The rights of one credential.

    ``namespace`` is a prefix of identifier parts (``('sales',)`` allows ``sales`` and
    everything below it, not ``salesforce``); ``databases`` limits the databases the
    credential may select (None: all of them).
    """

    read_only: bool = False
    namespace: tuple[str, ...] = ()
    databases: frozenset[str] | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None, what: str = "scope") -> Scope:
        """A scope from configuration: ``{read_only, namespace, databases}``, all optional."""
        raw = raw or {}
        unknown = set(raw) - {"read_only", "namespace", "databases"}
        if unknown:
            raise ValueError(
                f"{what}: unknown setting(s) {sorted(unknown)}; use read_only, namespace, "
                "databases."
            )
        read_only = raw.get("read_only", False)
        if not isinstance(read_only, bool):
            raise ValueError(f"{what}: read_only must be true or false, got {read_only!r}")
        databases = raw.get("databases")
        if databases is not None and (
            not isinstance(databases, (list, tuple, set, frozenset))
            or not all(isinstance(d, str) for d in databases)
        ):
            raise ValueError(f"{what}: databases must be a list of database names")
        return cls(
            read_only=read_only,
            namespace=_parts(raw.get("namespace"), f"{what}: namespace"),
            databases=frozenset(databases) if databases is not None else None,
        )

    @property
    def limited(self) -> bool:
        """False for full access, which needs no classification of the request."""
        return self.read_only or bool(self.namespace) or self.databases is not None

    def check(self, op: Operation, database: str) -> None:
        """Raise `ForbiddenError` unless this scope allows ``op`` on ``database``."""
        if self.databases is not None and database not in self.databases:
            name = repr(database) if database else "the default database"
            raise ForbiddenError(f"This credential may not use {name}.")
        self._check(op.write, op.ident, op.label, repr(op.label), op.delimiter)

    def allow(self, touch: Touch, delimiter: str) -> None:
        """Raise `ForbiddenError` unless this scope allows a name a request's member
        names (`_http.names.Gate`); the database was checked with the path."""
        label = f"{touch.label(delimiter)!r} (member {touch.member})"
        self._check(touch.write, touch.ident, label, label, delimiter)

    def _check(self, write: bool, ident: list[str] | None, label: str, quoted: str,
               delimiter: str) -> None:
        if write and self.read_only:
            raise ForbiddenError(
                f"This credential is read-only: it may not change {label}. Use a "
                "credential with write access."
            )
        if self.namespace:
            prefix = delimiter.join(self.namespace)
            if ident is None:
                raise ForbiddenError(
                    f"This credential is limited to namespace {prefix!r}; {label} is not "
                    "within a namespace."
                )
            if tuple(ident[: len(self.namespace)]) != self.namespace:
                raise ForbiddenError(
                    f"This credential is limited to namespace {prefix!r}: {quoted} is "
                    "outside it."
                )
