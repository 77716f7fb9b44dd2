"""Fixtures of the storage tests: real ``nsframe serve`` processes over a shared root.

``pair``: two servers on one root for the whole session (the multi-process tests give
each test namespaces of its own). ``solo``: one server on a fresh root per test, for the
crash tests, which kill and restart it.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._rest import Api
from ._servers import REPO, ServerProcess, cluster, kept_running, print_logs


@pytest.fixture(scope="session")
def code_under_test() -> Path:
    """The nsframe a started server imports is this worktree's, not another checkout's."""
    probe = ServerProcess("unused", Path("/nonexistent"), "probe")
    out = subprocess.run(
        [sys.executable, "-c", "import nsframe; print(nsframe.__file__)"],
        env=probe.environment(), cwd=REPO, capture_output=True, text=True, timeout=60,
        check=True,
    )
    imported = Path(out.stdout.strip()).resolve()
    assert imported.is_relative_to(REPO), f"servers would run {imported}, not {REPO}"
    return REPO


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory,
         code_under_test: Path) -> Iterator[list[ServerProcess]]:
    root = tmp_path_factory.mktemp("shared-root")
    logs = tmp_path_factory.mktemp("pair-logs")
    with cluster(str(root), 2, logs) as servers:
        assert servers[0].port != servers[1].port
        yield servers


@pytest.fixture
def servers(pair: list[ServerProcess]) -> Iterator[list[ServerProcess]]:
    """The pair, both running (a server that died in an earlier test is restarted)."""
    yield from kept_running(pair)


@pytest.fixture
def server_errors() -> list[str]:
    """Every 5xx answer of the test, filled by the Api objects given this list."""
    return []


@pytest.fixture
def ns(servers: list[ServerProcess], server_errors: list[str]) -> str:
    name = f"s{uuid.uuid4().hex[:10]}"
    with Api(servers[0], server_errors) as api:
        resp = api.create_namespace(name)
        assert resp.status_code == 200, resp.text
    return name


@pytest.fixture
def solo(tmp_path: Path, code_under_test: Path) -> Iterator[ServerProcess]:
    """One server on a fresh root (``tmp_path / "root"``), killed at the end."""
    root = tmp_path / "root"
    root.mkdir()
    server = ServerProcess(str(root), tmp_path / "logs", "solo")
    try:
        server.start()
        yield server
        print_logs([server])
    finally:
        server.kill()
