"""A cheap look at SQL text before Lance parses it: its size, its nesting, its parentheses.

Lance's parser (sqlparser + DataFusion) backtracks on nested ``NOT (``: its time doubles
about every level, 0.8 s at 34 levels and no answer within 30 s past 38, and it cannot be
interrupted. A 15 MiB ``id = 1 OR ...`` takes minutes. So every condition a client sends
is measured here first, in one regular-expression pass that skips quoted text and
comments, and refused with a 400 naming the limit when it is too long or too deep.

There is no shared SQL tokenizer in the package to reuse (the client's `nsframe._sql`
only quotes literals), hence this small one, for the server's checks only.
"""

from __future__ import annotations

import re

from nsframe.exceptions import InvalidInputError
from nsframe.server._limits import Limits

# Quoted strings and identifiers (a doubled quote is an escaped one; an unclosed one runs
# to the end), comments, and the tokens that nest: parentheses and the boolean operators.
_TOKENS = re.compile(
    r"""'(?:[^']|'')*(?:'|\Z)"""
    r'''|"(?:[^"]|"")*(?:"|\Z)'''
    r"|`(?:[^`]|``)*(?:`|\Z)"
    r"|--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|[()]"
    r"|\b(?:NOT|AND|OR)\b",
    re.IGNORECASE | re.DOTALL,
)


def nesting(sql: str) -> tuple[int, bool]:
    """How deeply ``sql`` nests, and whether a ')' closes a '(' that was never opened.

    Each open parenthesis counts one level, and so does each ``NOT`` still in force: a
    ``NOT`` applies up to the next ``AND``/``OR`` or ``)`` of its level, so
    ``NOT (NOT (x))`` is 4 deep and ``NOT a AND NOT b AND NOT c`` is 1.
    """
    frames = [0]  # per open parenthesis: the NOTs in force at its level
    level = deepest = 0
    unopened = False
    for match in _TOKENS.finditer(sql):
        token = match.group()
        head = token[0]
        if head == "(":
            frames.append(0)
            level += 1
        elif head == ")":
            if len(frames) == 1:
                unopened = True
                continue
            level -= 1 + frames.pop()
        elif head in "nN":
            frames[-1] += 1
            level += 1
        elif head in "aAoO":
            level -= frames[-1]
            frames[-1] = 0
        else:
            continue  # quoted text or a comment
        deepest = max(deepest, level)
    return deepest, unopened


def check_condition(sql: str, what: str, limits: Limits) -> None:
    """400 when ``sql`` is longer or nests deeper than ``limits`` allow."""
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > limits.max_predicate_bytes:
        raise InvalidInputError(
            f"The {what} is {size} bytes long; this server takes conditions of at most "
            f"{limits.max_predicate_bytes} bytes (max_predicate_bytes). For a long list "
            "of values, use one `column IN (...)` rather than many ORs, or split the work."
        )
    depth, _ = nesting(sql)
    if depth > limits.max_predicate_depth:
        raise InvalidInputError(
            f"The {what} nests {depth} levels deep (parentheses and NOTs); this server "
            f"takes at most {limits.max_predicate_depth} (max_predicate_depth): flatten it."
        )


def closes_unopened(sql: str) -> bool:
    """True if a ')' outside quotes and comments closes no '('."""
    return nesting(sql)[1]
