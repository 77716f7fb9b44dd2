"""A cheap look at SQL text before Lance parses it: its size, its nesting, its parentheses.

Lance's parser (sqlparser + DataFusion) backtracks on nested ``NOT (``: its time doubles
about every level, 0.8 s at 34 levels and no answer within 30 s past 38, and it cannot be
interrupted. A 15 MiB ``id = 1 OR ...`` takes minutes. So every condition a client sends
is measured here first, over the tokens of the protocol's one SQL tokenizer (so quoted
text and comments count as the client's `where` binding counts them), and refused with a
400 naming the limit when it is too long or too deep.
"""

from __future__ import annotations

import re

from nsframe._protocol.sql import Kind, tokenize
from nsframe.exceptions import InvalidInputError
from nsframe.server._limits import Limits

# The boolean operators in plain text: a NOT nests, an AND or OR ends the NOTs before it.
_OPERATORS = re.compile(r"\b(?:NOT|AND|OR)\b", re.IGNORECASE)


def nesting(sql: str) -> tuple[int, bool]:
    """How deeply ``sql`` nests, and whether a ')' closes a '(' that was never opened.

    Each open parenthesis counts one level, and so does each ``NOT`` still in force: a
    ``NOT`` applies up to the next ``AND``/``OR`` or ``)`` of its level, so
    ``NOT (NOT (x))`` is 4 deep and ``NOT a AND NOT b AND NOT c`` is 1.
    """
    frames = [0]  # per open parenthesis: the NOTs in force at its level
    level = deepest = 0
    unopened = False
    for token in tokenize(sql):
        if token.kind is Kind.OPEN:
            frames.append(0)
            level += 1
        elif token.kind is Kind.CLOSE:
            if len(frames) == 1:
                unopened = True
                continue
            level -= 1 + frames.pop()
        elif token.kind is Kind.TEXT:
            for word in _OPERATORS.finditer(token.text):
                if word.group()[0] in "nN":
                    frames[-1] += 1
                    level += 1
                else:
                    level -= frames[-1]
                    frames[-1] = 0
                deepest = max(deepest, level)
            continue
        else:
            continue  # quoted text, a comment or a placeholder
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
