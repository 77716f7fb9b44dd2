"""One tokenizer for the SQL of filters, so that the client and the server agree on what
is quoted, what is a comment and what is a ``?`` placeholder or a parenthesis.

It splits text only as far as those questions need: string literals (``'it''s'``),
quoted names (``"a b"``, ```a b```; a doubled quote inside is a quote), line comments
(``-- ...`` to the end of the line), block comments (``/* ... */``, not nested), ``?``,
``(`` and ``)``. Everything else is plain text. Joining the texts of the tokens gives
back the input exactly.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass


class Kind(enum.Enum):
    TEXT = "text"
    STRING = "string"
    QUOTED_NAME = "quoted name"
    LINE_COMMENT = "line comment"
    BLOCK_COMMENT = "block comment"
    PLACEHOLDER = "placeholder"
    OPEN = "open"
    CLOSE = "close"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    # False for a literal, quoted name or block comment that the input ends inside.
    closed: bool = True


# Where a token other than plain text may start.
_SPECIAL = re.compile(r"['\"`?()]|--|/\*")
_QUOTES = {"'": Kind.STRING, '"': Kind.QUOTED_NAME, "`": Kind.QUOTED_NAME}
_SINGLE = {"?": Kind.PLACEHOLDER, "(": Kind.OPEN, ")": Kind.CLOSE}


def tokenize(sql: str) -> Iterator[Token]:
    """The tokens of ``sql``, in order; an unterminated quote or block comment runs to
    the end of the input as one token with ``closed=False``."""
    i = 0
    while i < len(sql):
        special = _SPECIAL.search(sql, i)
        if special is None:
            yield Token(Kind.TEXT, sql[i:])
            return
        if special.start() > i:
            yield Token(Kind.TEXT, sql[i:special.start()])
        i = special.start()
        char = sql[i]
        if char in _QUOTES:
            end, closed = _quoted_end(sql, i)
            yield Token(_QUOTES[char], sql[i:end], closed)
        elif char in _SINGLE:
            end = i + 1
            yield Token(_SINGLE[char], char)
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            end = len(sql) if newline < 0 else newline
            yield Token(Kind.LINE_COMMENT, sql[i:end])
        else:  # "/*"
            close = sql.find("*/", i + 2)
            end = len(sql) if close < 0 else close + 2
            yield Token(Kind.BLOCK_COMMENT, sql[i:end], close >= 0)
        i = end


def _quoted_end(sql: str, start: int) -> tuple[int, bool]:
    """Where the quoted run opened at ``start`` ends, and whether its quote closes it."""
    quote = sql[start]
    i = start + 1
    while True:
        found = sql.find(quote, i)
        if found < 0:
            return len(sql), False
        if sql.startswith(quote, found + 1):
            i = found + 2  # a doubled quote is a quote inside the run
            continue
        return found + 1, True


def closes_unopened(sql: str) -> bool:
    """True if a ``)`` outside quotes and comments closes no ``(``."""
    depth = 0
    for token in tokenize(sql):
        if token.kind is Kind.OPEN:
            depth += 1
        elif token.kind is Kind.CLOSE:
            depth -= 1
            if depth < 0:
                return True
    return False
