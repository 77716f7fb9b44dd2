"""Listing versions costs memory in proportion to the page, not to the history (issue
23, point 6).

Before: each listed version was checked out on the table's shared dataset, so its
manifest stayed in the server's shared Lance session (metadata cache, 1 GiB by
default). Paging through 6,600 versions took the server from 223 MiB to 1.66 GB, and
kept it there. Here the pages are checked against pylance's own listing, the shared
cache must not grow with the versions listed, and a page reads only its own versions.
(`benchmarks/bench_version_listing.py` measures the memory and the time per page.)
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import requests

from nsframe.server import RunningServer, serve_in_thread
from nsframe.server._routes import versions as version_routes
from tests.support import ARROW_HEADERS, ipc_stream

APPENDS = 300  # fragments, so that each later manifest is a few tens of KiB
CONFIG_CHANGES = 1500  # versions that copy the manifest and add nothing
VERSIONS = 1 + APPENDS + CONFIG_CHANGES


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, str]]:
    with serve_in_thread(tmp_path_factory.mktemp("history")) as running:
        resp = requests.post(f"{running.url}/v1/table/t/create",
                             data=ipc_stream({"id": [0]}), headers=ARROW_HEADERS)
        assert resp.status_code == 200, resp.text
        location = requests.post(f"{running.url}/v1/table/t/describe",
                                 json={}).json()["location"]
        # Many versions, cheaply: pylance straight on the table's folder.
        ds = lance.dataset(location)
        for i in range(1, APPENDS + 1):
            ds = lance.write_dataset(pa.table({"id": [i]}), location, mode="append")
        for i in range(CONFIG_CHANGES):
            ds.update_config({"step": str(i)})
        assert ds.version == VERSIONS
        yield running, location


def shared_session_bytes(server: RunningServer) -> int:
    """The size of the Lance session the server's datasets share (their caches)."""
    app = server.app
    while not hasattr(app, "state"):  # the middlewares around the Starlette app
        app = app.app
    size: int = app.state.catalogs[""].datasets.session.size_bytes()
    return size


def pages(server: RunningServer, limit: int, descending: bool = False
          ) -> Iterator[list[dict[str, Any]]]:
    token: str | None = None
    while True:
        body: dict[str, Any] = {"limit": limit, "descending": descending}
        if token:
            body["page_token"] = token
        resp = requests.post(f"{server.url}/v1/table/t/version/list", json=body)
        assert resp.status_code == 200, resp.text
        yield resp.json()["versions"]
        token = resp.json().get("page_token")
        if not token:
            return


def millis(stamp: datetime) -> int:
    return int(stamp.timestamp() * 1000)


def test_pages_match_pylance_and_keep_nothing_in_the_shared_cache(
        history: tuple[RunningServer, str]) -> None:
    server, location = history
    requests.post(f"{server.url}/v1/table/t/describe", json={})  # the table is open
    before = shared_session_bytes(server)
    listed = [entry for page in pages(server, 400) for entry in page]
    grown = shared_session_bytes(server) - before
    # One version's manifest is ~25 KiB here: before, the listing kept all 1,800 of
    # them (~170 MiB). Now it keeps none; a few KiB of slack for the table's own state.
    assert grown < 1 << 20, f"the shared cache grew by {grown} bytes"

    expected = lance.dataset(location).versions()
    assert [e["version"] for e in listed] == [v["version"] for v in expected]
    for entry, version in zip(listed, expected, strict=True):
        assert entry["timestamp_millis"] == millis(version["timestamp"])
        summary = {k: v for k, v in entry["metadata"].items() if k.startswith("total_")}
        assert summary == version["metadata"]
        assert entry["branch"] == "main" and entry["manifest_path"].startswith("_versions/")
    assert listed[1]["metadata"]["operation"] == "Append"
    assert listed[-1]["metadata"]["operation"] == "UpdateConfig"

    newest_first = [e for page in pages(server, 1000, descending=True) for e in page]
    assert newest_first == listed[::-1]


def test_a_page_reads_only_its_own_versions(history: tuple[RunningServer, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    server, _ = history
    read: list[int] = []
    real = version_routes.read_version

    def counting(ds: Any, number: int) -> Any:
        read.append(number)
        return real(ds, number)

    monkeypatch.setattr(version_routes, "read_version", counting)
    first = requests.post(f"{server.url}/v1/table/t/version/list", json={"limit": 100}).json()
    assert read == list(range(1, 101))
    read.clear()
    second = requests.post(f"{server.url}/v1/table/t/version/list",
                           json={"limit": 100, "page_token": first["page_token"]}).json()
    assert read == list(range(101, 201))
    assert [e["version"] for e in second["versions"]] == read


def test_a_version_cleaned_up_meanwhile_is_left_out(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path) as server:
        requests.post(f"{server.url}/v1/table/t/create", data=ipc_stream({"id": [0]}),
                      headers=ARROW_HEADERS)
        location = requests.post(f"{server.url}/v1/table/t/describe", json={}).json()["location"]
        for i in range(1, 4):
            lance.write_dataset(pa.table({"id": [i]}), location, mode="append")
        listed = requests.post(f"{server.url}/v1/table/t/version/list", json={}).json()
        assert [e["version"] for e in listed["versions"]] == [1, 2, 3, 4]
        lance.dataset(location).cleanup_old_versions(older_than=timedelta(0),
                                                     delete_unverified=True)
        listed = requests.post(f"{server.url}/v1/table/t/version/list", json={}).json()
        assert [e["version"] for e in listed["versions"]] == [4]
