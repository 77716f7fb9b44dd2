"""One real server for the session, a fresh namespace per test.

``--root-kind s3`` (or ``NSFRAME_TEST_ROOT=s3``) runs the session server on an ``s3://``
root of a moto server on loopback instead of a local folder: the same tests, the same
assertions, on an object store. Tests of tests/server that do not use the session server
(auth, limits and databases start servers of their own on local folders; the request
models need none) are skipped in that run, since it would only repeat them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from tests.support.s3 import S3Endpoint, moto_server
from tests.support.stores import StoreView

ROOT_KINDS = ("local", "s3")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--root-kind", choices=ROOT_KINDS,
                     default=os.environ.get("NSFRAME_TEST_ROOT", "local"),
                     help="storage root of the session server: a local folder (default) or "
                     "an s3:// prefix on a moto server started for the session")
    parser.addoption("--transport", choices=("http", "embedded"),
                     default=os.environ.get("NSFRAME_TEST_TRANSPORT", "http"),
                     help="how the `conn` fixture reaches the session server: over HTTP "
                     "(default), or its ASGI app in process (nsframe.transport)")


def on_s3(config: pytest.Config) -> bool:
    return bool(config.getoption("--root-kind") == "s3")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not on_s3(config):
        return
    own = pytest.mark.skip(reason="does not use the session server (it starts its own on "
                           "local folders, or none): the s3 run repeats only the tests of "
                           "the session server")
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if item.nodeid.startswith("tests/server/") and "server" not in fixtures:
            item.add_marker(own)


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """A moto server on loopback with a bucket for the session."""
    with moto_server(tmp_path_factory.mktemp("moto")) as url:
        endpoint = S3Endpoint(url, f"nsframe-{uuid.uuid4().hex[:8]}")
        endpoint.create_bucket()
        yield endpoint


@pytest.fixture(scope="session")
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> StoreView:
    """The session server's root, on the kind of store ``--root-kind`` chose."""
    if on_s3(request.config):
        endpoint: S3Endpoint = request.getfixturevalue("s3")
        return StoreView(endpoint.new_root("server"), endpoint.options())
    return StoreView(str(tmp_path_factory.mktemp("lance")))


@pytest.fixture(scope="session")
def server(store: StoreView) -> Iterator[RunningServer]:
    with serve_in_thread(store.root, storage_options=store.options) as running:
        yield running


@pytest.fixture(scope="session")
def base_url(server: RunningServer) -> str:
    return server.url


@pytest.fixture(scope="session")
def root(request: pytest.FixtureRequest, server: RunningServer) -> Path:
    """The session server's root folder: only on a local root."""
    if on_s3(request.config):
        pytest.skip("inspects the local file system")
    return Path(server.config.root)


@pytest.fixture(scope="session")
def http(request: pytest.FixtureRequest) -> Iterator[requests.Session]:
    """A session for the contract tests; with ``--transport embedded`` its calls to the
    session server reach its app in process (tests/support/in_process.py)."""
    with requests.Session() as session:
        if request.config.getoption("--transport") == "embedded":
            from tests.support.in_process import InProcessAdapter

            running: RunningServer = request.getfixturevalue("server")
            session.mount(running.url + "/", InProcessAdapter(running.app))
        yield session


@pytest.fixture
def ns(base_url: str, http: requests.Session) -> str:
    """A namespace of its own for each test."""
    name = f"t{uuid.uuid4().hex[:12]}"
    resp = http.post(f"{base_url}/v1/namespace/{name}/create", json={})
    assert resp.status_code == 200, resp.text
    return name


@pytest.fixture
def conn(request: pytest.FixtureRequest, server: RunningServer) -> Iterator[Any]:
    """An nsframe client connection to the session server, through the transport
    ``--transport`` chose: every test using it passes on each."""
    import nsframe
    from nsframe.transport import EmbeddedTransport

    in_process = request.config.getoption("--transport") == "embedded"
    transport = EmbeddedTransport(server.app) if in_process else None
    with nsframe.connect(server.url, transport=transport) as connection:
        yield connection
