"""One real server for the session, a fresh namespace per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("lance")) as running:
        yield running


@pytest.fixture(scope="session")
def base_url(server: RunningServer) -> str:
    return server.url


@pytest.fixture(scope="session")
def root(server: RunningServer) -> Path:
    return Path(server.config.root)


@pytest.fixture(scope="session")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture
def ns(base_url: str, http: requests.Session) -> str:
    """A namespace of its own for each test."""
    name = f"t{uuid.uuid4().hex[:12]}"
    resp = http.post(f"{base_url}/v1/namespace/{name}/create", json={})
    assert resp.status_code == 200, resp.text
    return name


@pytest.fixture
def conn(base_url: str) -> Iterator[Any]:
    """An nsframe client connection to the session server."""
    import nsframe

    with nsframe.connect(base_url) as connection:
        yield connection
