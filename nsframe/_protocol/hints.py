"""The words of advice both sides give: "did you mean", and a missing column's message.

One phrasing everywhere, so a misspelled column reads the same whether it was a filter,
a projection, ``to_pandas(columns=)`` or an index's column.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# How many of a table's columns a message lists before it says "and N more".
LISTED_COLUMNS = 20


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` Did you mean 'x'?`` for the closest of ``choices`` (matched without case), or ''."""
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" Did you mean {by_lower[close[0]]!r}?" if close else ""


def missing_column(name: str, columns: Sequence[str], member: str = "column") -> str:
    """The detail of an unknown column: the suggestion first, then the table's columns."""
    shown = ", ".join(columns[:LISTED_COLUMNS])
    if len(columns) > LISTED_COLUMNS:
        shown += f" and {len(columns) - LISTED_COLUMNS} more"
    return (f"The {member} {name} is not in the table.{did_you_mean(name, columns)} "
            f"The table's columns: {shown or '(none)'}.")
