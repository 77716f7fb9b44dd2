"""Page tokens and limits, following spec/SEED_SPEC.md's pagination rules.

`limit` is an inclusive upper bound; a response carries a `page_token` whenever items
remain; the token is opaque (base64 of the last name returned) and a missing, null or
empty token ends the listing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import ClassVar

from nsframe._protocol.defaults import MAX_PAGE_SIZE
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import Count
from nsframe.server._http.validation import Envelope
from nsframe.server._limits import Limits

_FROM_URLSAFE = str.maketrans("-_", "+/")


def _decode(token: str) -> str:
    try:
        padded = token + "=" * (-len(token) % 4)
        # validate=True: a token with characters outside the alphabet is refused, not
        # silently shortened into some other position in the listing.
        standard = padded.translate(_FROM_URLSAFE).encode("ascii")
        return base64.b64decode(standard, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise InvalidInputError(
            f"The page_token {token!r} is not one this server issued: send back the "
            "page_token of the previous response unchanged."
        ) from exc


def encode_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii").rstrip("=")


class PageRequest(Envelope, kw_only=True):
    """A listing's members: the previous page's token and a limit (0 or none: the
    server's page size). Query parameters, or members of a JSON body."""

    page_token: str | None = None
    limit: Count | None = None

    QUERY: ClassVar[tuple[str, ...]] = ("page_token", "limit")

    def check_limits(self, limits: Limits) -> None:
        # A larger limit is not an error: spec/SEED_SPEC.md's limit is an upper bound, so a
        # page holds at most max_page_size names and its page_token leads on.
        self.limit = Count(min(self.limit or limits.max_page_size, limits.max_page_size))


def paginate(
    names: Sequence[str], page_token: str | None, limit: int | None
) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` after ``page_token``, and the token of the next page."""
    ordered = sorted(names)
    if page_token:
        after = _decode(page_token)
        ordered = [n for n in ordered if n > after]
    # `PageRequest.check_limits` has bounded ``limit`` by the server's max_page_size.
    size = limit or MAX_PAGE_SIZE
    page = ordered[:size]
    next_token = encode_token(page[-1]) if len(ordered) > size else None
    return page, next_token
