"""Every SQL expression a request carries is measured here, once, before Lance sees it.

Lance's parser and planner (sqlparser + DataFusion) recurse over an expression's tree and
cannot be interrupted: a flat chain ``x::bigint::...``, ``x = x = ...`` or
``'a'||'a'||...`` of 575-850 terms ends the server with SIGSEGV (stack overflow), and
each level of ``NOT (`` doubles the parse time. So a request model declares each member
that Lance reads as SQL with the type `Sql` (a str marked for this module), and `endpoint`
calls `check_expressions` on every decoded request: it finds the marked members by the
model's type, wherever they nest (a query inside an explain request, the values of an
update, the expressions of new columns), and refuses one that is too big with a 400
naming the limit. A member that is not marked is not SQL to the server:
tests/server/test_expression_members.py fails when a model gains a plain-text member
nobody has classified.

The budget (`Limits`, docs/server.md "Expression limits"): its length in bytes, its depth,
its longest chain of nested operators (what overflows the stack), its operators of any
kind and its terms (what takes time), counted by `nsframe._protocol.sql.measure` outside
quoted text and comments; and how much larger its growing functions can make a value
(what takes memory, `growth`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import msgspec.inspect as mi

from nsframe._protocol.sql import measure
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.growth import GrowthError, growth
from nsframe.server._limits import Limits

_MARK = "nsframe.sql"
# A member (or list item, or map value) that Lance parses as SQL.
Sql = Annotated[str, msgspec.Meta(extra={_MARK: True})]


def check_expression(sql: str, what: str, limits: Limits) -> None:
    """400 when ``sql`` is bigger than ``limits`` allow; ``what`` names it in the detail."""
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > limits.max_predicate_bytes:
        raise InvalidInputError(
            f"The {what} is {size} bytes long; this server takes expressions of at most "
            f"{limits.max_predicate_bytes} bytes (max_predicate_bytes). For a long list "
            "of values, use one `column IN (...)` rather than many ORs, or split the work "
            "into several requests."
        )
    shape = measure(sql)
    if shape.depth > limits.max_predicate_depth:
        raise InvalidInputError(
            f"The {what} nests {shape.depth} levels deep (parentheses, brackets, CASE and "
            f"NOTs); this server takes at most {limits.max_predicate_depth} "
            "(max_predicate_depth): flatten it."
        )
    if shape.chain > limits.max_expression_chain:
        raise InvalidInputError(
            f"The {what} chains {shape.chain} operators one inside the next (as in "
            "`a + b + c`, `a || b || c` or `a = b = c`; a group or call adds its own); "
            f"this server takes chains of at most {limits.max_expression_chain} "
            "(max_expression_chain). AND, OR and commas end a chain: join conditions with "
            "them, use one `column IN (v1, v2, ...)` for many values, or split the work "
            "into several requests."
        )
    if shape.operators > limits.max_expression_operators:
        raise InvalidInputError(
            f"The {what} has {shape.operators} operators (each of + - * / % ||, "
            "comparisons, AND, OR, NOT, LIKE, IN, CASE/WHEN/THEN/ELSE, and each "
            "parenthesis, call or subscript counts one); this server takes at most "
            f"{limits.max_expression_operators} in one expression (max_expression_operators). "
            "Use one `column IN (v1, v2, ...)` instead of many ORs of `column = v`, or "
            "split the work into several requests."
        )
    if shape.terms > limits.max_expression_terms:
        raise InvalidInputError(
            f"The {what} has {shape.terms} names and values; this server takes at most "
            f"{limits.max_expression_terms} in one expression (max_expression_terms): "
            "split the work into several requests (e.g. one IN list per range of keys)."
        )
    try:
        factor, grown = growth(sql)
    except GrowthError as exc:
        raise InvalidInputError(
            f"In the {what}, {exc}: this server counts how much larger such a function "
            "can make a value before running it (max_expression_growth). Write the size "
            "as a number, e.g. `lpad(code, 8, '0')`."
        ) from None
    if factor > limits.max_expression_growth:
        raise InvalidInputError(
            f"The {what} can make a value {factor} times larger than what it reads "
            f"({', '.join(grown)}; nested and side-by-side calls multiply); this server "
            f"takes at most {limits.max_expression_growth} (max_expression_growth), as it "
            "evaluates them for a whole batch of rows at once. Use smaller sizes, or do "
            "the work on the result in Python."
        )


def check_expressions(args: msgspec.Struct, limits: Limits) -> None:
    """`check_expression` on every `Sql` member of the decoded request ``args``."""
    for path, sql in _expressions(args, _struct_type(type(args)), ""):
        check_expression(sql, f"expression at {path}", limits)


def sql_paths(model: type[msgspec.Struct]) -> list[str]:
    """The paths of ``model``'s `Sql` members, as `check_expressions` names them
    (``[]`` for a list item, ``{}`` for a map value)."""
    return list(_type_paths(_struct_type(model), ""))


# ------------------------------------------------------------------ the walk
_struct_types: dict[type, tuple[mi.Field, ...]] = {}


def _struct_type(model: type) -> tuple[mi.Field, ...]:
    """``model``'s members that hold SQL somewhere, computed once per model."""
    found = _struct_types.get(model)
    if found is None:
        info = mi.type_info(model)
        assert isinstance(info, mi.StructType)
        found = _struct_types[model] = tuple(f for f in info.fields if _holds_sql(f.type))
    return found


def _is_sql(kind: mi.Type) -> bool:
    return isinstance(kind, mi.Metadata) and bool((kind.extra or {}).get(_MARK))


def _holds_sql(kind: mi.Type, seen: frozenset[type] = frozenset()) -> bool:
    if _is_sql(kind):
        return True
    if isinstance(kind, mi.Metadata):
        return _holds_sql(kind.type, seen)
    if isinstance(kind, mi.UnionType):
        return any(_holds_sql(k, seen) for k in kind.types)
    if isinstance(kind, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        return _holds_sql(kind.item_type, seen)
    if isinstance(kind, mi.TupleType):
        return any(_holds_sql(k, seen) for k in kind.item_types)
    if isinstance(kind, mi.DictType):
        return _holds_sql(kind.value_type, seen)
    if isinstance(kind, mi.StructType) and kind.cls not in seen:
        return any(_holds_sql(f.type, seen | {kind.cls}) for f in kind.fields)
    return False


def _expressions(value: Any, fields: tuple[mi.Field, ...], path: str
                 ) -> Iterator[tuple[str, str]]:
    for field in fields:
        yield from _walk(getattr(value, field.name), field.type,
                         f"{path}.{field.encode_name}" if path else field.encode_name)


def _walk(value: Any, kind: mi.Type, path: str) -> Iterator[tuple[str, str]]:
    """The (path, SQL) pairs of ``value``, decoded as ``kind``."""
    if value is None:
        return
    if _is_sql(kind):
        if isinstance(value, str):
            yield path, value
    elif isinstance(kind, mi.Metadata):
        yield from _walk(value, kind.type, path)
    elif isinstance(kind, mi.UnionType):
        # A union of shapes (a map, a list or a string): the member the value decoded as.
        for member in kind.types:
            if _fits(value, member):
                yield from _walk(value, member, path)
                return
    elif isinstance(kind, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        for i, item in enumerate(value):
            yield from _walk(item, kind.item_type, f"{path}[{i}]")
    elif isinstance(kind, mi.TupleType):
        for i, (item, item_kind) in enumerate(zip(value, kind.item_types, strict=False)):
            yield from _walk(item, item_kind, f"{path}[{i}]")
    elif isinstance(kind, mi.DictType):
        for key, item in value.items():
            yield from _walk(item, kind.value_type, f"{path}.{key}")
    elif isinstance(kind, mi.StructType):
        yield from _expressions(value, _struct_type(kind.cls), path)


def _fits(value: Any, kind: mi.Type) -> bool:
    """Whether ``value`` is of the shape ``kind`` decodes to."""
    if isinstance(kind, mi.Metadata):
        kind = kind.type
    if isinstance(kind, mi.StrType):
        return isinstance(value, str)
    if isinstance(kind, (mi.ListType, mi.VarTupleType, mi.TupleType)):
        return isinstance(value, (list, tuple))
    if isinstance(kind, mi.DictType):
        return isinstance(value, dict)
    if isinstance(kind, mi.StructType):
        return isinstance(value, kind.cls)
    return False


def _type_paths(fields: tuple[mi.Field, ...], path: str) -> Iterator[str]:
    for field in fields:
        yield from _kind_paths(field.type, f"{path}.{field.encode_name}" if path
                               else field.encode_name)


def _kind_paths(kind: mi.Type, path: str) -> Iterator[str]:
    if _is_sql(kind):
        yield path
    elif isinstance(kind, mi.Metadata):
        yield from _kind_paths(kind.type, path)
    elif isinstance(kind, mi.UnionType):
        for member in kind.types:
            yield from _kind_paths(member, path)
    elif isinstance(kind, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        yield from _kind_paths(kind.item_type, f"{path}[]")
    elif isinstance(kind, mi.TupleType):
        for i, item_kind in enumerate(kind.item_types):
            yield from _kind_paths(item_kind, f"{path}[{i}]")
    elif isinstance(kind, mi.DictType):
        yield from _kind_paths(kind.value_type, f"{path}{{}}")
    elif isinstance(kind, mi.StructType):
        yield from _type_paths(_struct_type(kind.cls), path)
