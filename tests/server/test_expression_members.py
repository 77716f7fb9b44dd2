"""Every request member Lance parses as SQL is declared `Sql`, and the walk finds it.

`check_expressions` (nsframe/server/_http/expressions.py) finds the members to measure by
their declared type, so a member Lance parses as SQL but declared plain ``str`` would
escape the budget: the first test fails when any model gains a plain-text member that
nobody has classified. tests/server/test_expression_budget.py sends the expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec
import msgspec.inspect as mi
import pytest

from nsframe._protocol.sql import measure
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.expressions import Sql, check_expressions, sql_paths
from nsframe.server._limits import Limits
from nsframe.server._routes import ROUTES

# Plain-text members that Lance never parses as SQL: names, modes, tokens, paths. A new
# plain-text member fails the test below until it is added here or marked `Sql`.
NOT_SQL = {
    # identifiers, names and settings
    "id", "branch", "from_branch", "mode", "name", "page_token", "on", "timeout", "column",
    "index_type", "base_tokenizer", "language", "vector_column", "path", "rename",
    "new_namespace", "new_namespace_id", "new_table_name", "location", "api_key",
    "auth_token", "properties", "primary_key",
    # field paths (`resolve` checks them against the schema), and full-text search text
    # (Lance's text query parser, not SQL)
    "columns", "query", "terms",
}
# Where the contract carries SQL (docs/server.md "Expression limits").
SQL_MEMBERS = {
    "CountRowsRequest": {"predicate", "filter"},
    "QueryRequest": {"filter", "columns{}", "columns{}{}"},
    "ExplainRequest": {"query.filter", "query.columns{}", "query.columns{}{}"},
    "DeleteRequest": {"predicate"},
    "UpdateRequest": {"updates[][]", "predicate"},
    "AddColumnsRequest": {"new_columns[].expression"},
    "MergeInsertRequest": {"when_matched_update_all_filt",
                           "when_not_matched_by_source_delete_filt"},
}


def _text_members(kind: mi.Type, path: str, seen: frozenset[type] = frozenset()
                  ) -> Iterator[tuple[str, bool]]:
    """(path, marked Sql) of each string ``kind`` holds (a recursive type once)."""
    if isinstance(kind, mi.Metadata):
        if isinstance(kind.type, mi.StrType):
            yield path, bool((kind.extra or {}).get("nsframe.sql"))
            return
        kind = kind.type
    if isinstance(kind, mi.StrType):
        yield path, False
    elif isinstance(kind, mi.UnionType):
        for member in kind.types:
            yield from _text_members(member, path, seen)
    elif isinstance(kind, (mi.ListType, mi.SetType, mi.VarTupleType)):
        yield from _text_members(kind.item_type, f"{path}[]", seen)
    elif isinstance(kind, mi.DictType):
        yield from _text_members(kind.value_type, f"{path}{{}}", seen)
    elif isinstance(kind, mi.StructType) and kind.cls not in seen:
        for field in kind.fields:
            yield from _text_members(field.type, f"{path}.{field.encode_name}"
                                     if path else field.encode_name, seen | {kind.cls})


def test_every_plain_text_member_of_a_request_is_classified() -> None:
    models = {route.model for route in ROUTES}
    unclassified = set()
    marked: dict[str, set[str]] = {}
    for model in models:
        for path, is_sql in _text_members(mi.type_info(model), ""):
            if is_sql:
                marked.setdefault(model.__name__, set()).add(path)
            elif path.rsplit(".", 1)[-1].rstrip("[]{}") not in NOT_SQL:
                unclassified.add(f"{model.__name__}.{path}")
    assert marked == SQL_MEMBERS
    assert not unclassified, (
        f"{sorted(unclassified)}: a plain-text request member; if Lance parses it as SQL, "
        "declare it `Sql` (nsframe/server/_http/expressions.py), else add it to NOT_SQL")
    for name, paths in SQL_MEMBERS.items():
        model = next(m for m in models if m.__name__ == name)
        assert set(sql_paths(model)) == paths


class Entry(msgspec.Struct):
    expression: Sql | None = None


class Model(msgspec.Struct):
    entries: list[Entry] | None = None
    pairs: list[list[Sql]] | None = None
    shapes: dict[str, list[str] | dict[str, Sql] | Sql | None] | list[str] | None = None


def test_the_walk_finds_nested_members() -> None:
    limits = Limits(max_expression_operators=2)
    big = "a + b + c + d"
    cases = [
        (Model(entries=[Entry("a"), Entry(big)]), "entries[1].expression"),
        (Model(pairs=[["a", big]]), "pairs[0][1]"),
        (Model(shapes={"v": big}), "shapes.v"),
        (Model(shapes={"column_aliases": {"v": big}}), "shapes.column_aliases.v"),
    ]
    for model, path in cases:
        with pytest.raises(InvalidInputError, match=rf"expression at {re.escape(path)} "):
            check_expressions(model, limits)
    check_expressions(Model(shapes=["a + b + c + d"], pairs=[["a", "b + c"]]), limits)


@pytest.mark.parametrize(("sql", "terms", "operators", "chain"), [
    ("id = 1", 2, 1, 1),
    ("id+id+id+id", 4, 3, 3),
    ("'a'||'a'||'a'", 3, 2, 2),
    ("id = 1 OR id = 2 OR id = 3", 6, 5, 1),  # OR ends each chain
    ("(a = 1 AND b = 2) OR (a = 3 AND b = 4)", 8, 9, 2),
    ("id IN (1, 2, 3, 4)", 5, 2, 2),  # each value a term, the list one operator
    ("(x+x)+(x+x)+(x+x)", 6, 8, 4),  # a group adds its own chain plus one
    ("abs(abs(abs(x)))", 4, 3, 3),  # the names of the calls are terms too
    ("f(a+a+a, b+b)", 6, 4, 3),  # a comma ends a chain
    ("- - - x", 1, 3, 3),
    ("NOT NOT x", 1, 2, 2),
    ("s = '+ + + ( ('  -- a + b + c", 2, 1, 1),  # quoted text and comments are not SQL
])
def test_measure_counts_terms_operators_and_chains(sql: str, terms: int, operators: int,
                                                   chain: int) -> None:
    shape = measure(sql)
    assert (shape.terms, shape.operators, shape.chain) == (terms, operators, chain)
