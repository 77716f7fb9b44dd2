"""Page tokens and limits, following spec/SEED_SPEC.md's pagination rules.

`limit` is an inclusive upper bound; a response carries a `page_token` whenever items
remain; the token is opaque and a missing, null or empty token ends the listing.

A token is ``<listing>/<base64url of the last item>/<check>``. The ``/`` is a
character no name may hold (`_storage.names.check_name`), so a token is never mistaken
for a name, nor a name for a token; the check (a keyed hash of the first two parts)
tells a damaged or made-up token from one of ours, and the listing part a token of
another listing. Tokens are not secret (the position is the last item the client saw),
and the key is fixed, so they stay valid across restarts and workers.

LanceDB's clients page by passing the last *name* they saw: on the listings of names
(``names_as_tokens``), a valid name that is not a token starts the page after it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence
from typing import ClassVar

from nsframe._protocol.defaults import MAX_PAGE_SIZE
from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import Count
from nsframe.server._http.validation import Envelope
from nsframe.server._limits import Limits
from nsframe.server._storage.names import check_name

_SEPARATOR = "/"
# Fixed, not secret: the check finds damage and tokens made elsewhere, not forgery, which
# gains nothing (any position may be asked for by name).
_KEY = b"nsframe page token v1"
_CHECK_BYTES = 6


def _check(listing: str, payload: str) -> str:
    digest = hmac.new(_KEY, f"{listing}{_SEPARATOR}{payload}".encode(), hashlib.sha256)
    return digest.hexdigest()[:2 * _CHECK_BYTES]


def encode_token(last: str, listing: str) -> str:
    """The token of the page after ``last`` in ``listing`` (a listing's short name)."""
    payload = base64.urlsafe_b64encode(last.encode("utf-8")).decode("ascii").rstrip("=")
    return _SEPARATOR.join((listing, payload, _check(listing, payload)))


def _refused(token: str, why: str) -> InvalidInputError:
    return InvalidInputError(
        f"The page_token {token!r} {why}: send back the page_token of the previous response "
        "unchanged, or leave it out to start from the first page."
    )


def _decode(token: str, listing: str) -> str:
    parts = token.split(_SEPARATOR)
    if len(parts) != 3:
        raise _refused(token, "is not one this server issued")
    kind, payload, check = parts
    if not hmac.compare_digest(check, _check(kind, payload)):
        raise _refused(token, "is damaged or was not issued by this server (its check "
                              "does not match)")
    if kind != listing:
        raise _refused(token, f"belongs to another listing ({kind}), not to this one "
                              f"({listing})")
    try:
        padded = payload + "=" * (-len(payload) % 4)
        return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:  # a check over bad bytes
        raise _refused(token, "is not one this server issued") from exc


def position(token: str, listing: str, names_as_tokens: bool) -> str:
    """The item a page starts after: ours decoded, or (``names_as_tokens``) a name."""
    if _SEPARATOR in token or not names_as_tokens:
        return _decode(token, listing)
    try:
        return check_name(token)
    except InvalidInputError as exc:
        raise _refused(token, "is neither a token this server issued nor a valid name "
                              "to start after") from exc


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
    names: Sequence[str], page_token: str | None, limit: int | None, *, listing: str,
    names_as_tokens: bool = False,
) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` after ``page_token``, and the token of the next page.

    ``listing`` names what is listed, so that its tokens are refused by other listings;
    ``names_as_tokens``: a valid name is a position too (LanceDB pages that way).
    """
    ordered = sorted(names)
    if page_token:
        after = position(page_token, listing, names_as_tokens)
        ordered = [n for n in ordered if n > after]
    # `PageRequest.check_limits` has bounded ``limit`` by the server's max_page_size.
    size = limit or MAX_PAGE_SIZE
    page = ordered[:size]
    next_token = encode_token(page[-1], listing) if len(ordered) > size else None
    return page, next_token
