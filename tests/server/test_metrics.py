"""``GET /metrics``: what it counts, who may scrape it, and its settings (docs/operations.md,
Metrics). Counters are process-wide, and other tests' servers run in this process too, so
each test compares two scrapes of its own server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import requests
from prometheus_client import REGISTRY

from nsframe.server import RunningServer, ServerConfig, create_app, serve_in_thread
from nsframe.server._config_file import config_from_argv, load_config_file
from nsframe.server._http.capacity import Lane
from tests.support import ipc_stream
from tests.support.metrics import added, by, label_values, scrape, total

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
FULL_KEY = "full-" + secrets.token_hex(16)
READ_KEY = "read-" + secrets.token_hex(16)
TOKEN = "token-" + secrets.token_hex(16)
KEYS = {FULL_KEY: {"name": "admin"}, READ_KEY: {"name": "reader", "read_only": True}}
REQUESTS = "nsframe_http_requests_total"
LATENCY = "nsframe_http_request_duration_seconds_count"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("metrics")) as running:
        yield running


def post(url: str, path: str, body: object = None, **headers: str) -> requests.Response:
    return requests.post(f"{url}{path}", json={} if body is None else body,
                         headers=headers, timeout=30)


def test_requests_are_counted_by_operation_and_status(server: RunningServer) -> None:
    url = server.url
    before = scrape(url)
    assert post(url, "/v1/namespace/m/create").status_code == 200
    made = requests.post(f"{url}/v1/table/m$t/create", headers=ARROW,
                         data=ipc_stream({"id": [1, 2, 3]}), timeout=30)
    assert made.status_code == 200, made.text
    for _ in range(3):
        assert post(url, "/v1/table/m$t/count_rows").json() == 3
    assert post(url, "/v1/table/m$nope/describe").status_code == 404
    assert post(url, "/v1/table/m$t/count_rows", {"predicate": "no_such > 1"}).status_code == 400
    assert requests.get(f"{url}/no/such/path", timeout=30).status_code == 404
    after = scrape(url)

    assert added([by(after, REQUESTS, "route", "status")],
                 [by(before, REQUESTS, "route", "status")]) == {
        ("CreateNamespace", "200"): 1, ("CreateTable", "200"): 1, ("CountRows", "200"): 3,
        ("DescribeTable", "404"): 1, ("CountRows", "400"): 1, ("unmatched", "404"): 1,
    }
    assert added([by(after, LATENCY, "route")], [by(before, LATENCY, "route")]) == {
        ("CreateNamespace",): 1, ("CreateTable",): 1, ("CountRows",): 4,
        ("DescribeTable",): 1, ("unmatched",): 1,
    }
    # The scrape itself is not counted, nor in flight; no path and no table in a label.
    assert total(after, "nsframe_http_requests_in_flight") == 0
    values = label_values(after)
    assert not {v for v in values if "m$" in v or "/" in v or v in ("t", "nope")}
    assert total(after, "nsframe_lane_slots_in_use") == 0
    assert total(after, "nsframe_lane_queue_requests") == 0
    assert total(after, "nsframe_lane_slots", lane="heavy") >= 8
    # The catalog's own reads and writes of a local root, and its caches.
    for kind in ("list", "create", "put"):
        assert total(after, "nsframe_store_requests_total", store="file", kind=kind) > \
            total(before, "nsframe_store_requests_total", store="file", kind=kind), kind
    assert total(after, "nsframe_catalog_cache_lookups_total", cache="dataset") > \
        total(before, "nsframe_catalog_cache_lookups_total", cache="dataset")


def test_table_labels_only_when_asked_and_only_for_answered_requests(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, metrics_table_labels=True) as running:
        url = running.url
        assert post(url, "/v1/namespace/lab/create").status_code == 200
        made = requests.post(f"{url}/v1/table/lab$items/create", headers=ARROW,
                             data=ipc_stream({"id": [1]}), timeout=30)
        assert made.status_code == 200, made.text
        assert post(url, "/v1/table/lab$items/describe").status_code == 200
        assert post(url, "/v1/table/lab.items/describe?delimiter=.").status_code == 200
        assert post(url, "/v1/table/lab$made-up-name/describe").status_code == 404
        after = scrape(url)
    counts = by(after, "nsframe_table_requests_total", "table", "route", "status")
    assert counts[("lab$items", "DescribeTable", "200")] == 2  # one name, either delimiter
    assert counts[("lab$items", "CreateTable", "200")] == 1
    # A name nobody could see is never a label: a client cannot grow the series.
    assert "lab$made-up-name" not in label_values(after)


def test_metrics_are_open_by_default_even_with_credentials(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, api_keys=KEYS) as running:
        before = scrape(running.url)  # no credential
        refused = post(running.url, "/v1/namespace/x/create")
        assert refused.status_code == 401
        after = scrape(running.url)
    # Refused before routing, and still counted under its operation.
    assert added([by(after, REQUESTS, "route", "status")],
                 [by(before, REQUESTS, "route", "status")]) == {("CreateNamespace", "401"): 1}


def test_metrics_require_auth_takes_any_credential_of_the_server(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path, api_keys=KEYS, tokens=[TOKEN],
                         metrics_require_auth=True) as running:
        url = f"{running.url}/metrics"
        for headers in ({}, {"x-api-key": "wrong-" + secrets.token_hex(8)},
                        {"Authorization": "Bearer wrong-token-123456789"}):
            resp = requests.get(url, headers=headers, timeout=30)
            assert resp.status_code == 401, headers
            body = resp.json()
            assert body["status"] == 401 and body["detail"]
        for headers in ({"x-api-key": READ_KEY}, {"x-api-key": FULL_KEY},
                        {"Authorization": f"Bearer {TOKEN}"}):
            resp = requests.get(url, headers=headers, timeout=30)
            assert resp.status_code == 200, headers
            assert "nsframe_http_requests_total" in resp.text


def test_metrics_require_auth_without_credentials_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="metrics_require_auth needs credentials"):
        create_app(tmp_path, metrics_require_auth=True)


def test_metrics_off_is_no_endpoint_and_no_counting(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path / "on") as counting, \
            serve_in_thread(tmp_path / "off", metrics=False) as silent:
        before = scrape(counting.url)
        assert requests.get(f"{silent.url}/metrics", timeout=30).status_code == 404
        assert post(silent.url, "/v1/namespace/q/create").status_code == 200
        after = scrape(counting.url)
    assert total(after, REQUESTS) == total(before, REQUESTS)


def test_lane_gauges_show_waiting_and_held_slots() -> None:
    def value(name: str) -> float | None:
        return REGISTRY.get_sample_value(name, {"lane": "upload"})

    lane = Lane("upload", 1, queue_timeout=5, gauges=True)
    start = (value("nsframe_lane_slots_in_use") or 0, value("nsframe_lane_queue_requests") or 0)
    seen: list[tuple[float | None, float | None]] = []

    async def scenario() -> None:
        release = await lane.admit()
        seen.append((value("nsframe_lane_slots_in_use"), value("nsframe_lane_queue_requests")))
        async with anyio.create_task_group() as tasks:
            async def second() -> None:
                (await lane.admit())()

            tasks.start_soon(second)
            await anyio.sleep(0.05)
            seen.append((value("nsframe_lane_slots_in_use"),
                         value("nsframe_lane_queue_requests")))
            release()
        seen.append((value("nsframe_lane_slots_in_use"), value("nsframe_lane_queue_requests")))

    anyio.run(scenario)
    used, waiting = start
    assert seen == [(used + 1, waiting), (used + 1, waiting + 1), (used, waiting)]


def test_settings_from_the_file_and_the_flags(tmp_path: Path) -> None:
    file = tmp_path / "nsframe.toml"
    file.write_text("metrics = false\nmetrics_require_auth = true\n"
                    "metrics_table_labels = true\n")
    config = load_config_file(file)
    assert (config.metrics, config.metrics_require_auth, config.metrics_table_labels) == (
        False, True, True)
    assert ServerConfig().metrics and not ServerConfig().metrics_require_auth
    assert not ServerConfig().metrics_table_labels
    flagged = config_from_argv(["--no-metrics", "--metrics-require-auth",
                                "--metrics-table-labels"], {})
    assert (flagged.metrics, flagged.metrics_require_auth, flagged.metrics_table_labels) == (
        False, True, True)
    assert "metrics_table_labels=True" in repr(flagged)
    file.write_text('metrics = "yes"\n')
    with pytest.raises(ValueError, match="metrics: give true or false"):
        load_config_file(file)
