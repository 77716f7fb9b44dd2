"""Error messages in the client's own words.

The server speaks to any REST client, so its ``detail`` names REST members and routes
(``mode exist_ok``, ``tags/update``, ``'vector_column'``). A Python user needs the
argument or method to use instead. Each rewrite below swaps one server phrase for the
client's; the server's text stays in ``APIError.detail``.
"""

from __future__ import annotations

import re

# (server phrase, the client's words). Order matters only where phrases overlap.
_REWRITES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"use mode exist_ok to open it or overwrite to replace it\."),
     "pass exist_ok=True to open it, or mode='overwrite' to replace it."),
    (re.compile(r"create with mode exist_ok or overwrite\."),
     "create it with exist_ok=True or mode='overwrite'."),
    (re.compile(r"use mode ExistOk to reuse it or Overwrite to replace its properties\."),
     "pass exist_ok=True to reuse it, or mode='overwrite' to replace its properties."),
    (re.compile(r"use tags/update to move it\."),
     "use tbl.tags.update(tag, version) to move it, or tbl.tags.delete(tag) first."),
    (re.compile(r"choose one with 'vector_column'\."),
     "choose one with column=, as in tbl.search(vector, column='...')."),
    (re.compile(r"The member 'vector_column' is empty: name the vector column, or leave it "
                r"out to use the table's only vector column\."),
     "column= is empty: name the vector column, or leave column= out to use the table's "
     "only vector column."),
    (re.compile(r"The vector_column (\S+) is"), r"The column \1 (column=) is"),
    (re.compile(r"vector\.single_vector has (\d+) numbers"), r"The query vector has \1 numbers"),
    (re.compile(r"or add them to the table first \(add_columns\)"),
     "or add them to the table first: tbl.add_columns([pa.field(name, type)])"),
    (re.compile(r"or use behavior Cascade\."), "or pass behavior='cascade'."),
    (re.compile(r"The member 'predicate' is required"), "delete() needs a SQL condition"),
    (re.compile(r"The member 'columns' has both column_names and column_aliases: send one "
                r"of them\."),
     "select() takes a list of names or a dict of aliases, not both."),
]


def client_message(detail: str) -> str:
    """``detail`` with the server's REST words replaced by the client's."""
    for pattern, words in _REWRITES:
        detail = pattern.sub(words, detail)
    return detail
