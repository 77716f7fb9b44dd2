"""What a credential may do: read-only or read-write, within a namespace prefix, on databases.

Every request is classified from its method and path *before* routing, against the
route templates of `_spec`: reads are a fixed list, everything else (including paths no
template knows) counts as a write outside any namespace, so a new route is denied to
limited credentials until it is classified here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from nsframe import _spec
from nsframe.exceptions import ForbiddenError
from nsframe.server._ids import get_delimiter

READ_TEMPLATES = frozenset({
    _spec.NAMESPACE_LIST,
    _spec.NAMESPACE_DESCRIBE,
    _spec.NAMESPACE_EXISTS,
    _spec.NAMESPACE_TABLE_LIST,
    _spec.TABLE_LIST_ALL,
    _spec.TABLE_DESCRIBE,
    _spec.TABLE_EXISTS,
    _spec.TABLE_COUNT_ROWS,
    _spec.TABLE_QUERY,
    _spec.TABLE_STATS,
    "/v1/table/{id}/explain_plan",
    "/v1/table/{id}/analyze_plan",
    _spec.INDEX_LIST,
    _spec.INDEX_STATS,
    _spec.VERSION_LIST,
    _spec.VERSION_DESCRIBE,
    _spec.TAGS_LIST,
    _spec.TAGS_VERSION,
    _spec.BRANCHES_LIST,
    _spec.TRANSACTION_DESCRIBE,
    _spec.EXT_TABLES_LIST,
})

# Templates whose `{id}` is not a namespace or table identifier.
_NOT_NAMESPACED = frozenset({_spec.TRANSACTION_DESCRIBE})

_PARAM = re.compile(r"\{(\w+)\}")


def _compile(template: str) -> re.Pattern[str]:
    pattern = ""
    last = 0
    for match in _PARAM.finditer(template):
        pattern += re.escape(template[last:match.start()])
        name = "ident" if match.group(1) in ("id", "table_name") else match.group(1)
        pattern += f"(?P<{name}>[^/]+)"
        last = match.end()
    return re.compile(pattern + re.escape(template[last:]) + "$")


def _templates() -> list[tuple[str, re.Pattern[str]]]:
    found = {value for name, value in vars(_spec).items()
             if name.isupper() and isinstance(value, str) and value.startswith("/v1/")}
    found |= READ_TEMPLATES
    return [(t, _compile(t)) for t in sorted(found, key=len, reverse=True)]


_TEMPLATES = _templates()


@dataclass(frozen=True)
class Operation:
    """A request as scopes see it: read or write, and the identifier it addresses.

    ``ident`` is None when the request addresses no namespace or table (transactions,
    unknown paths); ``[]`` is the root namespace.
    """

    write: bool
    ident: list[str] | None
    delimiter: str = _spec.DEFAULT_DELIMITER

    @property
    def label(self) -> str:
        if self.ident is None:
            return "this operation"
        return self.delimiter.join(self.ident) if self.ident else self.delimiter


def classify(method: str, path: str, query_string: bytes = b"") -> Operation:
    """Classify a request by its (decoded, slash-stripped) path and query string."""
    # Parsed by the handlers' own function (Starlette: the last of repeated values
    # wins): a different reading would let `?delimiter=f&delimiter=$` pass the scope as
    # `sales` + `orce$t` and reach table `t` of namespace `salesforce`.
    delimiter = get_delimiter(QueryParams(query_string.decode("latin-1")))
    for template, pattern in _TEMPLATES:
        match = pattern.match(path)
        if match is None:
            continue
        write = template not in READ_TEMPLATES
        if template in _NOT_NAMESPACED:
            return Operation(write, None, delimiter)
        raw = match.groupdict().get("ident")
        if raw is None:
            return Operation(write, [], delimiter)
        return Operation(write, [] if raw == delimiter else raw.split(delimiter), delimiter)
    return Operation(True, None, delimiter)


def _parts(value: object, what: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(value.split(_spec.DEFAULT_DELIMITER))
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
        if op.write and self.read_only:
            raise ForbiddenError(
                f"This credential is read-only: it may not change {op.label}. Use a "
                "credential with write access."
            )
        if self.namespace:
            prefix = op.delimiter.join(self.namespace)
            if op.ident is None:
                raise ForbiddenError(
                    f"This credential is limited to namespace {prefix!r}; {op.label} is not "
                    "within a namespace."
                )
            if tuple(op.ident[: len(self.namespace)]) != self.namespace:
                raise ForbiddenError(
                    f"This credential is limited to namespace {prefix!r}: {op.label!r} is "
                    "outside it."
                )
