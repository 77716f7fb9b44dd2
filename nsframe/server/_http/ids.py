"""Identifiers: the `{id}` path segment, the `delimiter` parameter and name safety.

Names are user data and become directory names, so anything that could escape the
storage root or confuse a file system is refused before it reaches storage.
"""

from __future__ import annotations

from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id, split_id
from nsframe.exceptions import InvalidInputError
from nsframe.server._storage.names import check_name

# A whole identifier: deep enough for any hierarchy, short enough for every store's keys.
MAX_ID_BYTES = 3600


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
