"""Walk a paginated listing and check spec/SEED_SPEC.md's pagination rules on every page."""

from __future__ import annotations

from typing import Any

import requests

MAX_PAGES = 50


def walk_pages(http: requests.Session, method: str, url: str, key: str,
               limit: int) -> tuple[dict[str, Any], int]:
    """Every item of the listing at ``url`` (member ``key``), and the number of pages.

    Checks on each page: ``limit`` is an inclusive upper bound, a non-final page is
    never empty, no item comes back twice, and the listing ends on a missing, null or
    empty ``page_token``. List members (namespaces, tables) map each item to None.
    """
    found: dict[str, Any] = {}
    token: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": limit}
        if token is not None:
            params["page_token"] = token
        resp = http.request(method, url, params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        items = body[key]
        page = dict.fromkeys(items) if isinstance(items, list) else dict(items)
        assert len(page) == len(items), f"an item came back twice within a page: {items}"
        pages += 1
        assert len(page) <= limit, body
        assert not set(page) & set(found), f"an item came back twice: {set(page) & set(found)}"
        found.update(page)
        token = body.get("page_token")
        if not token:
            return found, pages
        assert page, "a page with a page_token must not be empty"
        assert pages < MAX_PAGES, "pagination does not end"
