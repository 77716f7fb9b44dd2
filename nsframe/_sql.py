"""SQL literals from Python values, so that user data can never change a filter's meaning.

`bind` replaces each ``?`` placeholder of a filter with one quoted literal; `literal`
quotes one value. What counts as a placeholder (not one inside quotes or a comment) is
decided by the protocol's tokenizer (`nsframe._protocol.sql`), shared with the server.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterable, Sequence
from typing import Any

from nsframe._protocol.sql import Kind, tokenize


def literal(value: Any) -> str:
    """``value`` as a SQL literal: strings quoted with doubled single quotes, numbers as
    numbers, ``None`` as NULL, dates and datetimes as typed literals (a tz-aware
    datetime as a UTC timestamp, for tz-aware columns), bytes as ``X'..'``.

    Raises:
        ValueError: for NaN or infinite numbers, and values with no SQL form.
    """
    if value is not None and not isinstance(value, (str, bytes)) and hasattr(value, "item") \
            and not hasattr(value, "__len__"):
        value = value.item()  # numpy scalars
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no SQL literal: filter with IS NAN or drop it.")
        return repr(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{value!r} has no SQL literal.")
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return f"TIMESTAMP '{value.isoformat(sep=' ', timespec='microseconds')}'"
        # Only a timestamp typed with a time zone compares with a tz-aware column.
        utc = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return (f"arrow_cast('{utc.isoformat(timespec='microseconds')}Z', "
                "'Timestamp(Microsecond, Some(\"UTC\"))')")
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    raise ValueError(
        f"Cannot use a {type(value).__name__} as a SQL value: pass str, int, float, bool, "
        "None, Decimal, date, datetime, bytes or a list of those."
    )


def _sequence_literal(values: Iterable[Any]) -> str:
    items = [literal(v) for v in values]
    # `x IN ()` is not SQL; `x IN (NULL)` matches nothing, which is what an empty list means.
    return ", ".join(items) if items else "NULL"


def bind(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` placeholder replaced by the literal of the next value; a
    ``?`` inside a quoted string or name, or a comment, is left as it is.

    A list, tuple or set value becomes a comma-separated list, for ``IN (?)``.

    Raises:
        TypeError: if ``params`` is not a list or tuple.
        ValueError: if the number of ``?`` differs from the number of values, or a quote
            or block comment is not closed (a ``?`` after it would go unseen).
    """
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise TypeError("where() parameters must be a list or tuple of values, one per '?'.")
    out: list[str] = []
    used = 0
    for token in tokenize(sql):
        if not token.closed:
            opener = "/* comment" if token.kind is Kind.BLOCK_COMMENT else f"{token.text[0]} quote"
            raise ValueError(f"The filter has an unclosed {opener}: {sql!r}")
        if token.kind is not Kind.PLACEHOLDER:
            out.append(token.text)
            continue
        if used >= len(params):
            raise ValueError(f"The filter has more '?' than the {len(params)} values given.")
        value = params[used]
        used += 1
        if isinstance(value, (list, tuple, set, frozenset)):
            values = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            out.append(_sequence_literal(values))
        else:
            out.append(literal(value))
    if used != len(params):
        raise ValueError(f"The filter has {used} '?' but {len(params)} values were given.")
    return "".join(out)


def identifier(name: str) -> str:
    """A top-level column name as SQL, in backticks (safe for keywords and odd names)."""
    if "`" in name:
        raise ValueError(f"Column name {name!r} contains a backtick and cannot be quoted.")
    return f"`{name}`"
