"""How much larger than its inputs an expression's values can grow, counted before Lance
runs it (docs/server.md, "Expression limits").

A few SQL functions make a value many times larger than what they read: ``repeat(s,
n)``, ``lpad(s, n)``, ``array_repeat(x, n)``, ``range(n)``, ``replace(s, '', 'xx')``.
DataFusion evaluates them per row, for a whole batch at once, and cannot be interrupted
or bounded in memory. A 50-byte count_rows predicate, ``cardinality(array_repeat(id,
100000000)) > 0``, asked for 160 GB and ended the worker with SIGABRT; ``lpad(s,
100000000)`` and five nested ``replace`` calls each panicked inside Lance (a 500). So each
call of a growing function gets a factor from its literal arguments (an argument that
sets the size must be a literal), and `growth` multiplies the factors of every such call
in the expression: nested calls multiply, and side-by-side ones are counted as if nested,
which errs on the large side only. Functions not listed here grow a value by at most the
size of their other arguments, which the expression's own length bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from nsframe._protocol.sql import Kind, tokenize

_INTEGER = re.compile(r"\s*([+-]?\d+)\s*")
_NAME_BEFORE_CALL = re.compile(r"([^\W\d]\w*)\s*$")
_ARGUMENT_MARKS = re.compile(r"[,\[\]]")


class GrowthError(ValueError):
    """An argument that sets a growing call's size is not a literal; the message says
    which."""


@dataclass
class _Call:
    """One level of parentheses while `calls` reads them: the function it calls (or
    None for a group) and its top-level arguments, each a literal's value or None."""

    name: str | None
    args: list[int | str | None] = field(default_factory=list)
    parts: list[tuple[Kind, str]] = field(default_factory=list)  # of the current argument
    nested: bool = False  # the current argument holds a group, call or list
    brackets: int = 0  # open "[" of a list or subscript: their commas are not ours

    def end_argument(self) -> None:
        self.args.append(None if self.nested else _literal(self.parts))
        self.parts, self.nested = [], False


def _literal(parts: list[tuple[Kind, str]]) -> int | str | None:
    """An integer literal's value, a string literal's text, else None."""
    meaningful = [(k, t) for k, t in parts if k is not Kind.TEXT or t.strip()]
    if len(meaningful) != 1:
        return None
    kind, text = meaningful[0]
    if kind is Kind.STRING:
        return text[1:-1].replace("''", "'")
    number = _INTEGER.fullmatch(text) if kind is Kind.TEXT else None
    return int(number.group(1)) if number else None


def calls(sql: str, names: frozenset[str]) -> Iterator[tuple[str, list[int | str | None]]]:
    """Each call of a function in ``names`` (lower case) with its arguments: an integer
    or string literal's value, or None for anything else. Quoted text and comments are
    skipped; an unclosed call is not reported (Lance refuses it)."""
    stack: list[_Call] = [_Call(None)]
    pending: str | None = None  # the name just before a "(", if any
    for token in tokenize(sql):
        kind, text = token.kind, token.text
        if kind is Kind.OPEN:
            stack[-1].nested = True
            stack.append(_Call(pending))
            pending = None
            continue
        if kind is Kind.LINE_COMMENT or kind is Kind.BLOCK_COMMENT or \
                (kind is Kind.TEXT and not text.strip()):
            continue  # between a name and its "(" too: `repeat /* */ (s, 3)` is a call
        pending = None
        if kind is Kind.CLOSE:
            if len(stack) == 1:
                continue
            call = stack.pop()
            call.end_argument()
            if call.name in names:
                yield call.name, call.args
            continue
        if kind is Kind.TEXT:
            call, start = stack[-1], 0
            for mark in _ARGUMENT_MARKS.finditer(text):
                if mark.group() == "[":
                    call.brackets += 1
                    call.nested = True
                elif mark.group() == "]":
                    call.brackets = max(0, call.brackets - 1)
                elif not call.brackets:  # a comma between two arguments
                    call.parts.append((kind, text[start:mark.start()]))
                    call.end_argument()
                    start = mark.end()
            call.parts.append((kind, text[start:]))
            found = _NAME_BEFORE_CALL.search(text)
            pending = found.group(1).lower() if found else None
        elif kind is Kind.QUOTED_NAME:
            stack[-1].parts.append((kind, text))
            pending = text[1:-1].lower()
        else:  # a string or a placeholder
            stack[-1].parts.append((kind, text))


# ------------------------------------------------------------------ the factors
def _count(name: str, args: list[int | str | None], position: int) -> int:
    """The integer literal at ``position`` (0-based), which sets the size."""
    value = args[position] if position < len(args) else None
    if not isinstance(value, int):
        raise GrowthError(f"{name}() takes an integer literal as its argument "
                          f"{position + 1} here (the size it makes)")
    return max(1, value)


def _text(name: str, args: list[int | str | None], position: int, what: str) -> str:
    value = args[position] if position < len(args) else ""
    if not isinstance(value, str):
        raise GrowthError(f"{name}() takes a string literal as its {what} here")
    return value


def _sized(position: int) -> Callable[[str, list[int | str | None]], int]:
    """A function whose result is up to the count at ``position`` times its input."""
    return lambda name, args: _count(name, args, position)


def _series(name: str, args: list[int | str | None]) -> int:
    """range(stop), range(start, stop[, step]): how many values; generate_series the same,
    counting its stop."""
    if not args or not all(isinstance(a, int) for a in args):
        raise GrowthError(f"{name}() takes integer literals here (the values it makes)")
    numbers = [int(a) for a in args if isinstance(a, int)]
    start, stop = (0, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])
    step = numbers[2] if len(numbers) > 2 else 1
    if step == 0:
        return 1  # Lance refuses it
    return max(1, math.ceil((stop - start) / step) + (name == "generate_series"))


def _replace(name: str, args: list[int | str | None]) -> int:
    """replace(s, from, to): each match of ``from`` becomes ``to``; an empty ``from``
    matches between every two characters."""
    target = _text(name, args, 1, "text to find")
    replacement = _text(name, args, 2, "replacement")
    size = len(replacement.encode())
    if target:
        return max(1, math.ceil(size / len(target.encode())))
    return size + 1


def _regexp_replace(name: str, args: list[int | str | None]) -> int:
    """regexp_replace(s, pattern, to[, flags]): a match may be empty, and each ``\\1`` in
    ``to`` copies up to a whole match again."""
    size = len(_text(name, args, 2, "replacement").encode())
    return 2 * size + 1 if size else 1


def _joined(name: str, args: list[int | str | None]) -> int:
    """array_to_string(array, separator[, null text]): a separator between every two
    elements, which may be one character each, and numbers written out (an 8-byte
    integer takes up to 20 characters)."""
    extra = sum(len(_text(name, args, i, what).encode())
                for i, what in ((1, "separator"), (2, "text for nulls")) if i < len(args))
    return extra + 3


FACTORS: dict[str, Callable[[str, list[int | str | None]], int]] = {
    "repeat": _sized(1),
    "lpad": _sized(1),
    "rpad": _sized(1),
    "array_repeat": _sized(1),
    "list_repeat": _sized(1),
    "array_resize": _sized(1),
    "list_resize": _sized(1),
    "range": _series,
    "generate_series": _series,
    "replace": _replace,
    "regexp_replace": _regexp_replace,
    "encode": lambda name, args: 2,  # hex doubles; base64 adds a third
    "array_to_string": _joined,
    "array_join": _joined,
    "list_to_string": _joined,
    "list_join": _joined,
}
_NAMES = frozenset(FACTORS)
SHOWN = 5  # calls named in a refusal
# Enough of every name to find it in lower case, quoted or not: a cheap test before the
# token walk (for a 250 KB IN list, 1.7 ms with the lowering; a regex of the names, 22 ms).
_STEMS = ("repeat", "pad", "resize", "range", "series", "replace", "encode", "string",
          "join")


def growth(sql: str) -> tuple[int, list[str]]:
    """The product of the growth factors of ``sql``'s calls, and the first few calls that
    grew (``"repeat x1000"``); ``(1, [])`` when it calls none. `GrowthError` when a size is
    not a literal."""
    lowered = sql.lower()
    if not any(stem in lowered for stem in _STEMS):
        return 1, []
    product, grown = 1, []
    for name, args in calls(sql, _NAMES):
        factor = FACTORS[name](name, args)
        if factor > 1:
            product *= factor
            grown.append(f"{name} x{factor}")
    return product, grown if len(grown) <= SHOWN else [*grown[:SHOWN], "..."]
