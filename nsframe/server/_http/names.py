"""What a request names besides its path: the identifiers, namespaces and locations held
by its model's members, declared on the models so that the scopes authorize each one.

A member that names something is typed with one of the marked types below
(``new_namespace_id: NamespaceId | None``). After the model is decoded, `endpoint` asks
`touched` for every name the request reaches and hands each to the credential's `Gate`
(`_security.scopes.Scope`), with the route's access unless the marker says otherwise.
A new member that names an identifier and carries no marker fails
``tests/server/test_scope_walk.py``.

- ``Identifier``: a whole identifier, parts as a list (the envelope's ``id``).
- ``NamespaceId``: a namespace; with a ``TableName`` in the same model, the namespace that
  name goes into (a rename's target). Without one, the path's namespace.
- ``TableName``: a table name in that namespace.
- ``Location``: storage a table is registered from; it is authorized as the identifier it
  is registered into (the path), and `_storage.registry` checks who owns the folder.
- ``InTable``: a name inside the path's own table (a branch, a column): the path's
  authorization covers it; marked so that it is declared, not forgotten.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import msgspec

from nsframe._protocol.ids import join_id, split_id

Access = Literal["read", "write"]
Kind = Literal["identifier", "namespace", "table_name", "location", "in_table"]


@dataclass(frozen=True)
class Named:
    """The marker: what a member names, and the access it needs (None: the route's)."""

    kind: Kind
    access: Access | None = None

    def __post_init__(self) -> None:
        # Fail closed: a kind `touched` does not know would authorize nothing.
        if self.kind not in typing.get_args(Kind):
            raise ValueError(f"unknown kind of name {self.kind!r}: use one of "
                             f"{typing.get_args(Kind)}")


Identifier = Annotated[list[str], Named("identifier")]
NamespaceId = Annotated[list[str], Named("namespace")]
TableName = Annotated[str, Named("table_name")]
Location = Annotated[str, Named("location")]
InTable = Annotated[str, Named("in_table")]


@dataclass(frozen=True)
class Member:
    """A marked member of a model: its path of member names from the model, and its marker."""

    path: tuple[str, ...]
    named: Named


@dataclass(frozen=True)
class Touch:
    """One name a request reaches, as the scopes check it."""

    ident: list[str]
    write: bool
    member: str

    def label(self, delimiter: str) -> str:
        return join_id(self.ident, delimiter) if self.ident else delimiter


class Gate(Protocol):
    """What a credential allows (`_security.scopes.Scope`): raises `ForbiddenError`."""

    def allow(self, touch: Touch, delimiter: str) -> None: ...


# The ASGI scope key under which `_security.auth` leaves the gate of a limited credential.
GATE = "nsframe.gate"


# ------------------------------------------------------------------ declarations
def _marker(hint: Any) -> Named | None:
    """The marker of a member's type hint, in ``Annotated[...]`` or a union holding one."""
    if typing.get_origin(hint) is Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, Named)), None)
    found = [m for arg in typing.get_args(hint) if (m := _marker(arg)) is not None]
    return found[0] if found else None


def _structs(hint: Any) -> Iterator[type[msgspec.Struct]]:
    """The Struct types a hint may hold (in unions, lists, maps)."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        yield hint
        return
    for arg in typing.get_args(hint):
        yield from _structs(arg)


def _hints(struct: type[msgspec.Struct]) -> dict[str, Any]:
    hints = typing.get_type_hints(struct, include_extras=True)
    return {name: hints[name] for name in struct.__struct_fields__}


_members: dict[type, list[Member]] = {}


def members(model: type[msgspec.Struct]) -> list[Member]:
    """Every marked member of ``model`` and of the Structs it holds, found from its type
    hints (cached per model); a recursive Struct is listed once, at its first level."""
    found = _members.get(model)
    if found is None:
        found = _members[model] = list(_walk(model, (), frozenset()))
    return found


def _walk(model: type[msgspec.Struct], prefix: tuple[str, ...],
          seen: frozenset[type]) -> Iterator[Member]:
    for name, hint in _hints(model).items():
        named = _marker(hint)
        if named is not None:
            yield Member((*prefix, name), named)
        for inner in _structs(hint):
            if inner not in seen | {model}:  # recursive Structs (full-text query nodes)
                yield from _walk(inner, (*prefix, name), seen | {model})


# ------------------------------------------------------------------ a request's names
@dataclass(frozen=True)
class _Plan:
    """What `touched` reads of one Struct type: its marked members, and the members that
    may hold a Struct with marked members (at any depth, recursive ones too)."""

    own: tuple[tuple[str, Named], ...]
    deeper: tuple[str, ...]


_plans: dict[type, _Plan] = {}


def _plan(struct: type[msgspec.Struct]) -> _Plan:
    found = _plans.get(struct)
    if found is None:
        hints = _hints(struct)
        found = _plans[struct] = _Plan(
            tuple((name, named) for name, hint in hints.items()
                  if (named := _marker(hint)) is not None),
            tuple(name for name, hint in hints.items()
                  if any(members(inner) for inner in _structs(hint))),
        )
    return found


def touched(args: msgspec.Struct, path_id: list[str], write: bool,
            delimiter: str) -> list[Touch]:
    """Every name the decoded request ``args`` reaches through its members: one `Touch`
    per identifier, namespace (+ table name) and location its marked members hold."""
    touches: list[Touch] = []
    _collect(args, "", path_id, write, delimiter, touches)
    return touches


def _collect(value: Any, prefix: str, path_id: list[str], write: bool, delimiter: str,
             out: list[Touch]) -> None:
    if isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, prefix, path_id, write, delimiter, out)
        return
    if isinstance(value, dict):
        for item in value.values():
            _collect(item, prefix, path_id, write, delimiter, out)
        return
    if not isinstance(value, msgspec.Struct):
        return
    plan = _plan(type(value))
    given = [(prefix + name, named, v) for name, named in plan.own
             if (v := getattr(value, name)) is not None]
    if given:
        out.extend(_own_touches(given, plan, path_id, write, delimiter))
    for name in plan.deeper:
        _collect(getattr(value, name), f"{prefix}{name}.", path_id, write, delimiter, out)


def _parts(value: Any, delimiter: str) -> list[str]:
    return split_id(value, delimiter) if isinstance(value, str) else [str(p) for p in value]


def _own_touches(given: list[tuple[str, Named, Any]], plan: _Plan, path_id: list[str],
                 route_write: bool, delimiter: str) -> Iterator[Touch]:
    """The names one Struct's marked members reach; ``given``: (label, marker, value) of
    those that hold a value."""

    def write(named: Named) -> bool:
        return route_write if named.access is None else named.access == "write"

    for label, named, value in given:
        if named.kind == "identifier":
            yield Touch(_parts(value, delimiter), write(named), label)
        elif named.kind == "location":
            yield Touch(list(path_id), write(named), label)
    # A table name goes into the namespace a member names, else the path's namespace; a
    # namespace without a table name takes the path's table (a rename that moves only).
    table_names = [(label, value) for label, named, value in given
                   if named.kind == "table_name"]
    namespaces = [(label, named, value) for label, named, value in given
                  if named.kind == "namespace"]
    renames = any(named.kind == "table_name" for _, named in plan.own)
    leaf = [str(table_names[0][1])] if table_names else path_id[-1:] if renames else []
    for label, named, value in namespaces:
        both = f"{label} + {table_names[0][0]}" if table_names else label
        yield Touch([*_parts(value, delimiter), *leaf], write(named), both)
    if table_names and not namespaces:
        label, value = table_names[0]
        named = next(n for _, n in plan.own if n.kind == "table_name")
        yield Touch([*path_id[:-1], str(value)], write(named), label)
