"""Fixtures of the client tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.client.test_http import Script, Scripted


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    """Start scripted HTTP servers (`test_http.Scripted`), each closed after the test."""
    started: list[Scripted] = []

    def start(script: Script, drop_first: int = 0) -> Scripted:
        server = Scripted(script, drop_first)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()
