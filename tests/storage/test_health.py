"""Liveness and readiness of a real ``nsframe serve``: answered without a credential,
revealing nothing, and readiness follows the store."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import requests

from nsframe._protocol import routes
from tests.support.s3 import Proxy, S3Endpoint, moto_server

from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess

KEY = "health-test-key-0123456789"
PROBES = ("/healthz", "/readyz")


@pytest.fixture
def keyed(tmp_path: Path, code_under_test: Path) -> Iterator[ServerProcess]:
    """A server that needs an API key on every /v1 path."""
    server = ServerProcess(str(tmp_path / "root"), tmp_path / "logs", "keyed",
                           extra_args=["--api-key", KEY])
    try:
        server.start()
        yield server
    finally:
        server.kill()


def test_probes_answer_without_a_credential_and_reveal_nothing(keyed: ServerProcess) -> None:
    for path in PROBES:
        resp = requests.get(keyed.url + path, timeout=10)
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"status": "ok"}
        assert resp.headers["cache-control"] == "no-store"
        head = requests.head(keyed.url + path, timeout=10)
        assert head.status_code == 200 and head.content == b""
        # A load balancer checks a backend by its address, not a name the server knows.
        foreign = requests.get(keyed.url + path, headers={"Host": "10.1.2.3:2333"}, timeout=10)
        assert foreign.status_code == 200 and foreign.json() == {"status": "ok"}
    # Nothing else is open: another method on a probe, and every /v1 path, need the key.
    assert requests.post(keyed.url + "/healthz", json={}, timeout=10).status_code == 401
    templates = [v for k, v in vars(routes).items() if k.isupper() and isinstance(v, str)
                 and v.startswith(routes.API_PREFIX)]
    assert len(templates) > 40
    for template in templates:
        path = template.replace("{id}", "t")
        for method in ("GET", "POST"):
            resp = requests.request(method, keyed.url + path, json={}, timeout=10)
            assert resp.status_code == 401, f"{method} {path}: {resp.status_code}"
        assert requests.post(keyed.url + path, json={}, headers={"x-api-key": KEY},
                             timeout=10).status_code != 401


def test_readiness_follows_the_store(tmp_path: Path, code_under_test: Path) -> None:
    """Ready while the store answers, at most about one store request a second however
    often it is polled; 503 once the store is gone, while liveness stays 200."""
    store = ExitStack()
    url = store.enter_context(moto_server(tmp_path / "moto"))
    s3 = S3Endpoint(url, f"health-{uuid.uuid4().hex[:8]}")
    s3.create_bucket()
    with store, Proxy(url) as proxy, requests.Session() as session:
        server = ServerProcess(s3.new_root("health"), tmp_path / "logs", "health",
                               env=s3.through(proxy.url).env())
        try:
            server.start()
            assert session.get(server.url + "/readyz", timeout=10).status_code == 200
            proxy.reset()
            started, polls = time.monotonic(), 0
            while time.monotonic() - started < 2.5:  # polled as fast as it answers
                resp = session.get(server.url + "/readyz", timeout=10)
                assert resp.status_code == 200, resp.text
                polls += 1
            elapsed = time.monotonic() - started
            assert polls > 100
            assert 1 <= proxy.counts["HEAD"] <= elapsed + 1, (proxy.counts, elapsed)
            store.close()  # moto stops: the store does not answer at all
            answers = _poll(session, server.url + "/readyz", until=503)
            assert answers[-1] == (503, {"status": "unavailable"})
            live = session.get(server.url + "/healthz", timeout=10)
            assert live.status_code == 200 and live.json() == {"status": "ok"}
            # Why is in the log, not in the answer.
            assert "readiness: the store did not answer" in server.log_tail(400)
        finally:
            server.kill()


def _poll(session: requests.Session, url: str, *, until: int,
          seconds: float = 60.0) -> list[tuple[int, object]]:
    seen: list[tuple[int, object]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        resp = session.get(url, timeout=10)
        seen.append((resp.status_code, resp.json()))
        if resp.status_code == until:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{url} never answered {until}: {seen[-5:]}")
