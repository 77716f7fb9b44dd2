"""Identifiers: the `{id}` path segment, the `delimiter` parameter and name safety.

Names are user data and become directory names, so anything that could escape the
storage root or confuse a file system is refused before it reaches storage.
"""

from __future__ import annotations

import unicodedata

from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id, split_id
from nsframe.exceptions import InvalidInputError

MAX_NAME_BYTES = 200
# A whole identifier: deep enough for any hierarchy, short enough for every store's keys.
MAX_ID_BYTES = 3600
# Format characters that are ordinary parts of words (Persian, Indic scripts) and of
# emoji sequences; other format characters (bidi overrides) can disguise a name.
_JOINERS = frozenset("\u200c\u200d")


def check_name(name: str, what: str = "name") -> str:
    """Return ``name`` if it is safe as one path segment, else raise 400."""
    if not isinstance(name, str) or name == "":
        raise InvalidInputError(f"The {what} is empty: give every identifier part a name.")
    if name in (".", ".."):
        raise InvalidInputError(f"The {what} {name!r} is reserved: choose another name.")
    if "/" in name or "\\" in name:
        raise InvalidInputError(
            f"The {what} {name!r} contains a slash: names may not contain '/' or '\\'."
        )
    if any(
        unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in _JOINERS
        for ch in name
    ):
        raise InvalidInputError(
            f"The {what} {name!r} contains a control character: use printable characters only."
        )
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidInputError(
            f"The {what} is {len(name.encode('utf-8'))} bytes long: the limit is {MAX_NAME_BYTES}."
        )
    return name


def get_delimiter(params: dict[str, str] | object) -> str:
    """The delimiter query parameter, `$` when absent."""
    value = params.get("delimiter") if hasattr(params, "get") else None
    if value is None:
        return DEFAULT_DELIMITER
    if value == "":
        raise InvalidInputError("The delimiter query parameter is empty: omit it or give one.")
    return str(value)


def parse_id(text: str, delimiter: str) -> list[str]:
    """Split the path `{id}` into parts; the delimiter alone is the root namespace."""
    parts = split_id(text, delimiter)
    if len(text.encode("utf-8")) > MAX_ID_BYTES:
        raise InvalidInputError(
            f"The identifier nests too deep or its names are too long ({len(parts)} parts, "
            f"{len(text.encode('utf-8'))} bytes; the limit is {MAX_ID_BYTES} bytes): use "
            "fewer levels or shorter names."
        )
    for part in parts:
        check_name(part, "identifier part")
    return parts


def check_body_id(body_id: list[str] | None, path_id: list[str], delimiter: str) -> None:
    """A body `id` that differs from the path id is a 400 (upstream REST rule)."""
    if body_id is not None and body_id != path_id:
        raise InvalidInputError(
            f"The body id {join_id(body_id, delimiter)!r} differs from the path id "
            f"{join_id(path_id, delimiter)!r}: send the same identifier in both, or omit it "
            "from the body."
        )
