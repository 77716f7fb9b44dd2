"""Which names the storage holds: a name becomes a folder or key segment, so anything
that could escape the root or confuse a file system or object store is refused (400)."""

from __future__ import annotations

import unicodedata

from nsframe.exceptions import InvalidInputError

MAX_NAME_BYTES = 200
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
