"""Environment variables alone configure a replica (issue 27): three ``nsframe serve``
processes on moto's S3 behind the round-robin balancer, given their root, API key,
limits, read consistency interval and vending only as ``NSFRAME_*`` variables, and
nothing but ``--port`` on the command line."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from tests.support.s3 import S3Endpoint

from ._fleet import fleet
from ._rest import Api, rows
from ._servers import REPO

pytestmark = pytest.mark.multiprocess

KEY = "fleet-env-key-5b0c1a9e7d3f"
SETTINGS = {
    "NSFRAME_API_KEYS": KEY,
    "NSFRAME_MAX_PAGE_SIZE": "2",
    "NSFRAME_QUERY_TIMEOUT": "30",
    "NSFRAME_READ_CONSISTENCY_INTERVAL": "0",
    "NSFRAME_VEND_STORAGE_OPTIONS": "true",
}


def test_environment_variables_alone_configure_three_replicas(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory) -> None:
    with fleet(s3, tmp_path_factory.mktemp("fleet-env"), env=SETTINGS,
               root_in_env=True) as replicas:
        for server in replicas.servers:
            assert server.root not in server.command(server.port or 0)  # only NSFRAME_ROOT
        url = replicas.url
        # The key from NSFRAME_API_KEYS: without it 401, with it the request works.
        refused = requests.post(f"{url}/v1/namespace/fleet/create", json={}, timeout=30)
        assert refused.status_code == 401, refused.text
        keyed = {"x-api-key": KEY}
        made = requests.post(f"{url}/v1/namespace/fleet/create", json={}, headers=keyed,
                             timeout=30)
        assert made.status_code == 200, made.text

        first, second, third = replicas.servers
        with Api(first) as api_a, Api(second) as api_b, Api(third) as api_c:
            for api in (api_a, api_b, api_c):
                api.session.headers.update(keyed)
            # Written through one replica, read through another: one root, NSFRAME_ROOT's.
            assert api_a.create("fleet$t", rows(range(4))).status_code == 200
            assert sorted(api_b.ids("fleet$t")) == [0, 1, 2, 3]
            described = api_c.describe("fleet$t")
            assert described["location"].startswith(replicas.root + "/")
            # NSFRAME_VEND_STORAGE_OPTIONS: describe hands out the store's options.
            assert described["storage_options"]["aws_endpoint"] == s3.url
            # NSFRAME_MAX_PAGE_SIZE: a listing page holds at most 2 names.
            for name in ("a", "b", "c"):
                assert api_a.create_namespace(name).status_code == 200
            page = api_c.post("/v1/namespace/$/list", params={"limit": "10"}, json={}).json()
            assert len(page["namespaces"]) == 2 and page.get("page_token")


def test_print_config_shows_where_each_setting_came_from_with_secrets_masked(
        s3: S3Endpoint) -> None:
    """The same environment, as `--print-config` shows it: every NSFRAME_* variable
    taken, and neither the key nor the store's secret in the output."""
    root = s3.new_root("print")
    env = {**s3.env(), **SETTINGS, "NSFRAME_ROOT": root, "PYTHONPATH": str(REPO),
           "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "nsframe._cli", "serve", "--print-config"],
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    shown = {line.split(" = ")[0]: line for line in result.stdout.splitlines()
             if " = " in line and not line.startswith("#")}
    assert shown["root"].endswith("# env NSFRAME_ROOT") and root in shown["root"]
    assert "0.0" in shown["read_consistency_interval"]
    for name in ("limits.max_page_size", "limits.query_timeout", "vend_storage_options",
                 "read_consistency_interval", "api_keys"):
        assert f"# env NSFRAME_{name.removeprefix('limits.').upper()}" in shown[name], shown[name]
    assert KEY not in result.stdout and s3.secret_key not in result.stdout
