"""The harness itself: two real servers on one root see each other's writes, and a
killed server comes back on the same root with its data. If these fail, the other
storage tests say nothing about the server."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.support.s3 import S3Endpoint

from ._fleet import fleet
from ._rest import Api, rows
from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess


def test_two_servers_share_one_root(servers: list[ServerProcess], ns: str,
                                    server_errors: list[str]) -> None:
    a, b = servers
    assert a.alive and b.alive and a.port != b.port
    assert a.root == b.root
    with Api(a, server_errors) as api_a, Api(b, server_errors) as api_b:
        resp = api_a.create(f"{ns}$t", rows(range(5)))
        assert resp.status_code == 200, resp.text
        assert sorted(api_b.ids(f"{ns}$t")) == [0, 1, 2, 3, 4]
        assert ns in api_b.namespaces()
    assert server_errors == []


def test_kill_and_restart_keeps_data(solo: ServerProcess) -> None:
    with Api(solo) as api:
        assert api.create_namespace("n").status_code == 200
        assert api.create("n$t", rows(range(3))).status_code == 200
    pid = solo.proc.pid if solo.proc else None
    solo.kill()
    assert not solo.alive
    with pytest.raises(requests.ConnectionError):
        requests.post(f"{solo.url}/v1/namespace/%24/exists", json={}, timeout=5)
    solo.start()
    assert solo.proc is not None and solo.proc.pid != pid and solo.starts == 2
    with Api(solo) as api:
        assert api.count("n$t") == 3
        assert api.server_errors == []


def test_the_balancer_spreads_requests_over_three_replicas(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
        code_under_test: Path) -> None:
    with fleet(s3, tmp_path_factory.mktemp("fleet-logs")) as replicas:
        session = requests.Session()
        made = session.post(f"{replicas.url}/v1/namespace/n/create", json={}, timeout=30)
        assert made.status_code == 200, made.text
        for _ in range(9):
            resp = session.post(f"{replicas.url}/v1/namespace/n/exists", json={}, timeout=30)
            assert resp.status_code == 200, resp.text
        assert sorted(replicas.balancer.sent.values()) == [10 // 3, 10 // 3, 10 // 3 + 1]
        assert len(replicas.balancer.sent) == 3
