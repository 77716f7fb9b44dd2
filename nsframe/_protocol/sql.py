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


# ------------------------------------------------------------------ the size of an expression
# Counted in plain text with one regex search each (C speed: an IN list of 10,000 values
# is three scans, not 10,000 steps of Python). A sign in an exponent (1e-5) counts as an
# operator: the count errs on the large side only.
_TERM = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[^\W\d]\w*")
_SYMBOL = re.compile(r"\|\||<=|>=|<>|!=|==|=>|->>|->|::|<<|>>|[-+*/%<>=!~^&|@#\[]")
# Keywords that are a node of the expression's tree, as an operator symbol is.
OPERATOR_WORDS = ("and", "or", "not", "like", "ilike", "similar", "regexp", "rlike", "in",
                  "is", "between", "case", "when", "then", "else", "escape", "any", "all",
                  "some", "exists")
_OPERATOR_WORD = re.compile(r"\b(?:" + "|".join(OPERATOR_WORDS) + r")\b", re.IGNORECASE)
# What changes the depth or ends a chain: NOT, AND/OR (which end the NOTs before them),
# CASE ... END, subscripts and commas (parentheses are tokens of their own).
_NESTING = re.compile(r"\b(?:not|and|or|case|end)\b|[\[\],]", re.IGNORECASE)
# Text of numbers and commas only, as inside a long IN list: counted without the scans.
_NUMBERS = re.compile(r"[\d\s,.]*")


@dataclass(frozen=True)
class Shape:
    """How much work an expression is for a parser that recurses over it.

    ``terms`` counts names, literals and ``?`` placeholders (each value of an IN list is
    one). ``operators`` counts every operator symbol (``+ - * / % || = < <= ...``, unary
    ones too), every keyword of ``OPERATOR_WORDS`` (AND and OR included) and every ``(``
    or ``[`` (a group, a call, a list or a subscript). ``chain`` is the longest chain of
    operators nested one inside the next: ``a + b + c`` is ``(a + b) + c`` to the parser,
    a chain of 2, and a group or call adds its own chain plus one; AND, OR and commas end
    a chain, as Lance joins their operands without nesting them (a chain of ``=`` ran out
    of stack at 675 terms, 16,000 ORs took 1.7 s). ``depth`` is the deepest nesting of
    parentheses, brackets, ``CASE ... END`` and ``NOT``s in force (a ``NOT`` applies up
    to the next ``AND``/``OR`` or ``)`` of its level: ``NOT (NOT (x))`` is 4 deep, ``NOT
    a AND NOT b`` is 1). ``unopened`` is true when a ``)`` closes no ``(``.
    """

    terms: int
    operators: int
    chain: int
    depth: int
    unopened: bool


class _Level:
    """One level of parentheses (or brackets, or a CASE) while `measure` reads it."""

    __slots__ = ("inner", "longest", "nots", "run")

    def __init__(self) -> None:
        self.nots = 0  # NOTs in force
        self.run = 0  # operators since the last AND, OR or comma
        self.inner = 0  # the longest chain of a group closed since then
        self.longest = 0  # the longest chain ended at this level

    def end_chain(self) -> None:
        self.longest = max(self.longest, self.run + self.inner)
        self.run = self.inner = 0

    def chain(self) -> int:
        return max(self.longest, self.run + self.inner)


def _links(text: str, start: int, end: int) -> tuple[int, int]:
    """The operator symbols and words in ``text[start:end]``, a stretch without marks."""
    if start >= end:
        return 0, 0
    return (len(_SYMBOL.findall(text, start, end)),
            len(_OPERATOR_WORD.findall(text, start, end)))


def measure(sql: str) -> Shape:
    """The `Shape` of ``sql``, outside its quoted text and comments, in one pass."""
    levels = [_Level()]
    depth = deepest = terms = operators = 0
    unopened = False

    def open_level() -> None:
        nonlocal depth, deepest
        levels.append(_Level())
        depth += 1
        deepest = max(deepest, depth)

    def close_level() -> bool:
        nonlocal depth
        if len(levels) == 1:
            return False
        closed = levels.pop()
        depth -= 1 + closed.nots
        outer = levels[-1]
        outer.inner = max(outer.inner, closed.chain() + 1)
        return True

    for token in tokenize(sql):
        kind = token.kind
        if kind is Kind.TEXT:
            text = token.text
            if _NUMBERS.fullmatch(text):
                terms += text.count(",") + 1 if text.strip(" \t\r\n,") else 0
                continue
            # Names and values, less the keywords among them (operators, or END).
            terms += len(_TERM.findall(text))
            start = 0
            for found in _NESTING.finditer(text):
                # The operators since the last mark lengthen the chain they are in.
                symbols, words = _links(text, start, found.start())
                operators += symbols + words
                terms -= words
                levels[-1].run += symbols + words
                start = found.end()
                mark = found.group().lower()
                level = levels[-1]
                operators += mark not in (",", "]", "end")
                terms -= mark not in (",", "[", "]")
                if mark == "not":
                    level.run += 1
                    level.nots += 1
                    depth += 1
                    deepest = max(deepest, depth)
                elif mark in ("and", "or", ","):
                    depth -= level.nots
                    level.nots = 0
                    level.end_chain()
                elif mark in ("case", "["):
                    open_level()
                else:  # END or "]"
                    close_level()
            symbols, words = _links(text, start, len(text))
            operators += symbols + words
            terms -= words
            levels[-1].run += symbols + words
        elif kind is Kind.OPEN:
            operators += 1
            open_level()
        elif kind is Kind.CLOSE:
            unopened = not close_level() or unopened
        elif kind is not Kind.LINE_COMMENT and kind is not Kind.BLOCK_COMMENT:
            terms += 1  # a string, a quoted name or a placeholder
    longest = max(level.chain() for level in levels)
    return Shape(terms, operators, longest, deepest, unopened)
