"""A server leaves nothing running once it stops: no thread it started (the catalogs'
lease renewals, the uvicorn thread, worker threads), whether it is the embedded server
of `nsframe.connect(path)` or an app built by `create_app` whose lifespan ended."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import nsframe
from nsframe.server import ServerConfig, create_app, serve_in_thread
from nsframe.server._config_file import load_config_file

# Threads end a moment after they are told to (a worker thread wakes from its queue).
JOIN_SECONDS = 5.0


def _left_running(before: set[threading.Thread]) -> list[str]:
    """Names of the threads started since ``before`` that are still alive after a short
    wait for them to end."""
    deadline = time.monotonic() + JOIN_SECONDS
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            return sorted(t.name for t in extra)
        time.sleep(0.05)


@pytest.fixture
def before() -> Iterator[set[threading.Thread]]:
    yield set(threading.enumerate())


def test_the_embedded_server_stops_every_thread_it_started_on_close(
        tmp_path: Path, before: set[threading.Thread]) -> None:
    conn = nsframe.connect(tmp_path / "data")
    tbl = conn.create_table("items", {"id": [1, 2, 3]})
    tbl.add({"id": [4]})
    assert tbl.count_rows() == 4
    conn.close()
    assert _left_running(before) == []


def test_the_embedded_server_stops_at_the_end_of_a_with_block(
        tmp_path: Path, before: set[threading.Thread]) -> None:
    with nsframe.connect(tmp_path / "data", database="") as conn:
        conn.create_table("items", {"id": [1]})
    assert _left_running(before) == []


def test_serve_in_thread_stops_every_thread_and_closes_its_catalogs(
        tmp_path: Path, before: set[threading.Thread]) -> None:
    with serve_in_thread(tmp_path / "data", database_from_host=False,
                         databases={"other": str(tmp_path / "other")}) as server:
        conn = nsframe.connect(server.url)
        conn.create_table("items", {"id": [1]})
        conn.close()
    assert _left_running(before) == []
    # A closed server's record under the root is gone, as after any clean stop.
    assert list((tmp_path / "data" / "_nsframe" / "servers").iterdir()) == []


def test_create_app_stops_every_thread_after_its_lifespan_ends(
        tmp_path: Path, before: set[threading.Thread]) -> None:
    app = create_app(tmp_path / "data")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        made = client.post("/v1/namespace/n/create", json={})
        assert made.status_code == 200, made.text
        assert client.get("/readyz").json() == {"status": "ok"}
    assert _left_running(before) == []
    assert list((tmp_path / "data" / "_nsframe" / "servers").iterdir()) == []


def test_readiness_answers_503_once_the_app_drains(tmp_path: Path) -> None:
    app = create_app(tmp_path / "data", api_keys=["a-key-of-sixteen-chars"])
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/readyz").json() == {"status": "ok"}
        assert client.head("/healthz").status_code == 200
        app.lifecycle.drain()
        draining = client.get("/readyz")
        assert (draining.status_code, draining.json()) == (503, {"status": "draining"})
        assert draining.headers["retry-after"] == "1"
        # Liveness and the API are not affected by the drain.
        assert client.get("/healthz").json() == {"status": "ok"}
        listing = client.get("/v1/table", headers={"x-api-key": "a-key-of-sixteen-chars"})
        assert listing.status_code == 200, listing.text


def test_shutdown_settings_from_the_config_file(tmp_path: Path) -> None:
    file = tmp_path / "nsframe.toml"
    file.write_text("drain_delay = 5\ngraceful_timeout = 120.5\n")
    config = load_config_file(file)
    assert (config.drain_delay, config.graceful_timeout) == (5.0, 120.5)
    assert "drain_delay=5.0, graceful_timeout=120.5" in repr(config)
    assert (ServerConfig().drain_delay, ServerConfig().graceful_timeout) == (0.0, 30.0)
    for bad in ('drain_delay = "5"', "graceful_timeout = -1", "drain_delay = true"):
        file.write_text(bad + "\n")
        with pytest.raises(ValueError, match="give a number at least 0"):
            load_config_file(file)
    with pytest.raises(ValueError, match=r"graceful_timeout.*give a number at least 0"):
        ServerConfig(graceful_timeout=-3)


def test_the_embedded_server_closes_its_catalogs_at_interpreter_exit(tmp_path: Path) -> None:
    """A connection never closed is closed when the interpreter exits: the server's
    record under the root goes with it, as after `close()`."""
    script = ("import nsframe, sys\n"
              "conn = nsframe.connect(sys.argv[1])\n"
              "conn.create_table('items', {'id': [1, 2]})\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "data" / "_nsframe" / "servers").iterdir()) == []
