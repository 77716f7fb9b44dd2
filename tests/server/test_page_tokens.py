"""Page tokens cannot be mistaken for names (issue 23, point 9).

Before: a token was the base64 of the last name, so a name that happened to be valid
base64 was decoded as a token. LanceDB's namespace connection passes the last name it
saw as ``page_token``: ``table_names(page_token="a1", limit=2)`` read "a1" as the token of
"k" and answered an empty page. Now our tokens have a shape no name can have, and carry a
check; a name starts the page after it; anything else is a 400 that says what it is.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import lancedb
import pytest
import requests

import nsframe
from nsframe.server import RunningServer, serve_in_thread
from tests.support import ARROW_HEADERS, assert_error, ipc_stream

NAMES = ["a0", "a1", "a2", "b1", "k", "z9"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("tokens")) as running:
        for name in NAMES:
            resp = requests.post(f"{running.url}/v1/table/{name}/create",
                                 data=ipc_stream({"id": [1]}), headers=ARROW_HEADERS)
            assert resp.status_code == 200, resp.text
            resp = requests.post(f"{running.url}/v1/namespace/n{name}/create", json={})
            assert resp.status_code == 200, resp.text
        yield running


def tables_page(server: RunningServer, **params: Any) -> requests.Response:
    return requests.get(f"{server.url}/v1/namespace/$/table/list", params=params)


@pytest.mark.upstream
def test_lancedb_namespace_client_pages_by_name(served: RunningServer) -> None:
    db = lancedb.connect_namespace("rest", {"uri": served.url})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # table_names() in 0.40
        assert list(db.table_names(limit=2)) == ["a0", "a1"]
        # "a1" is valid base64: it was read as the token of "k", and the page was empty.
        assert list(db.table_names(page_token="a1", limit=2)) == ["a2", "b1"]
        assert list(db.table_names(page_token="b1", limit=10)) == ["k", "z9"]
        assert list(db.table_names(page_token="z9", limit=10)) == []
    # list_tables() hands back our own token, which leads on.
    first = db.list_tables(limit=4)
    assert first.tables == ["a0", "a1", "a2", "b1"]
    rest = db.list_tables(page_token=first.page_token, limit=4)
    assert rest.tables == ["k", "z9"] and not rest.page_token


def test_a_name_starts_the_page_after_it(served: RunningServer) -> None:
    body = tables_page(served, page_token="a1", limit=2).json()
    assert body["tables"] == ["a2", "b1"]
    # A name that is not in the listing works the same: the names after it.
    assert tables_page(served, page_token="c", limit=10).json()["tables"] == ["k", "z9"]
    namespaces = requests.get(f"{served.url}/v1/namespace/$/list",
                              params={"page_token": "na1", "limit": 2}).json()
    assert namespaces["namespaces"] == ["na2", "nb1"]


def test_our_tokens_cannot_be_names_and_lead_through_the_listing(served: RunningServer
                                                                 ) -> None:
    seen: list[str] = []
    token: str | None = None
    while True:
        body = tables_page(served, limit=2, **({"page_token": token} if token else {})).json()
        seen += body["tables"]
        token = body.get("page_token")
        if not token:
            break
        # A '/' is in every token and in no name (names.check_name refuses it).
        assert "/" in token
    assert seen == NAMES


def test_our_client_pages_through_every_listing(served: RunningServer) -> None:
    conn = nsframe.connect(served.url)
    conn.client.page_size = 2
    assert conn.table_names("$") == NAMES
    assert conn.namespaces("$") == [f"n{n}" for n in NAMES]


@pytest.mark.parametrize(("token", "says"), [
    # Forged, or damaged in transit: the shape of ours, a check that does not match.
    ("tables/YTE/000000000000", "damaged"),
    ("tables/YTE", "not one this server issued"),
    # Neither a token nor a name: names have no control characters, no '\\'.
    ("a\\b", "neither"),
    ("..", "neither"),
])
def test_a_token_from_elsewhere_is_a_400_that_says_so(served: RunningServer, token: str,
                                                      says: str) -> None:
    detail = assert_error(tables_page(served, page_token=token), 400, 13)["detail"]
    assert "page_token" in detail and says in detail


def test_a_token_of_another_listing_is_refused(served: RunningServer) -> None:
    token = requests.get(f"{served.url}/v1/namespace/$/list",
                         params={"limit": 1}).json()["page_token"]
    detail = assert_error(tables_page(served, page_token=token), 400, 13)["detail"]
    assert "another listing" in detail


def test_version_listing_takes_only_its_own_tokens(served: RunningServer) -> None:
    """Versions are not named, so a name is no position among them."""
    url = f"{served.url}/v1/table/a0/version/list"
    detail = assert_error(requests.post(url, json={"page_token": "a1"}), 400, 13)["detail"]
    assert "page_token" in detail
