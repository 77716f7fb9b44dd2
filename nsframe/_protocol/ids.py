"""Identifiers as text: parts joined by a delimiter, the delimiter alone for the root.

A namespace or table is named by a list of parts (``["db", "items"]``); on the wire, in
the ``{id}`` path segment, they are joined by the delimiter (``db$items``), which a
request may change with ``?delimiter=``. No parts (the root namespace) is written as
the delimiter alone, since an empty path segment cannot be sent.
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_DELIMITER = "$"


def join_id(parts: Iterable[str], delimiter: str = DEFAULT_DELIMITER) -> str:
    """The string form of an identifier; no parts is the root namespace."""
    parts = list(parts)
    return delimiter.join(parts) if parts else delimiter


def split_id(text: str, delimiter: str = DEFAULT_DELIMITER) -> list[str]:
    """The parts of an identifier; the delimiter alone is the root namespace (no parts).

    Parts are not checked here: an empty part (``"a$$b"``) comes back as ``""`` for the
    caller to refuse.
    """
    if text == delimiter:
        return []
    return text.split(delimiter)
