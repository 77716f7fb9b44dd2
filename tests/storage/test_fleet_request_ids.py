"""A request id follows one request from the client's exception to the log lines of the
one replica that answered it (issue 27): three `nsframe serve --log-format json`
replicas on moto's S3 behind a round-robin balancer, and one server logging text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nsframe
from nsframe.exceptions import TableNotFoundError
from tests.support.s3 import S3Endpoint

from ._fleet import fleet
from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess

# The line the test harness writes before each start (tests/storage/_servers.py).
HARNESS = "=== start"


def json_lines(server: ServerProcess) -> list[dict[str, Any]]:
    """Every line the server printed, each parsed (a line that is not JSON fails)."""
    parsed = []
    for number, line in enumerate(server.log_path.read_text("utf-8").splitlines(), 1):
        if not line.strip() or line.startswith(HARNESS):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            pytest.fail(f"{server.name} line {number} is not JSON: {line!r}")
        assert isinstance(entry, dict)
        assert {"time", "level", "logger", "message", "request_id"} <= set(entry), line
        parsed.append(entry)
    return parsed


def test_a_request_id_leads_from_the_exception_to_one_replicas_log_lines(
        s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
        code_under_test: Path) -> None:
    with fleet(s3, tmp_path_factory.mktemp("fleet-ids"),
               extra_args=["--log-format", "json"]) as replicas:
        with nsframe.connect(replicas.url) as conn:
            conn.create_namespace("shop")
            for _ in range(3):  # each replica answers requests
                assert conn.namespace("shop").table_names() == []
            with pytest.raises(TableNotFoundError) as info:
                conn["shop$missing"].count_rows()
        error = info.value
        rid = error.request_id
        assert rid and str(error).endswith(f"(request id {rid})")
        logs = {server.name: json_lines(server) for server in replicas.servers}

    holding = {name: [e for e in entries if e["request_id"] == rid]
               for name, entries in logs.items()}
    holders = [name for name, entries in holding.items() if entries]
    assert len(holders) == 1, holding
    mine = holding[holders[0]]
    access = [e for e in mine if e["logger"] == "nsframe.server.access"]
    assert len(access) == 1, mine
    assert {k: access[0][k] for k in ("method", "path", "status", "credential")} == {
        "method": "POST", "path": "/v1/table/shop$missing/count_rows", "status": 404,
        "credential": "anonymous"}
    assert access[0]["duration_ms"] >= 0
    errors = [e for e in mine if e["logger"] == "nsframe.server"]
    assert len(errors) == 1 and "TableNotFoundError" in errors[0]["message"], mine
    assert "shop$missing" in errors[0]["message"]
    for name, entries in logs.items():
        # uvicorn's lines are JSON too, and every request a replica handled has an id.
        assert any("Uvicorn running on" in e["message"] for e in entries), name
        handled = [e for e in entries if e["logger"] == "nsframe.server.access"]
        assert handled and all(e["request_id"] for e in handled), name


def test_text_lines_show_the_request_id(solo: ServerProcess) -> None:
    with nsframe.connect(solo.url) as conn, pytest.raises(TableNotFoundError) as info:
        conn.open_table("missing")
    rid = info.value.request_id
    lines = [line for line in solo.log_path.read_text("utf-8").splitlines()
             if f"[{rid}]" in line]
    assert len(lines) == 2, lines
    error, access = lines
    assert " nsframe.server INFO " in error and "TableNotFoundError" in error
    assert " nsframe.server.access INFO " in access
    assert f"[{rid}] POST /v1/table/missing/describe 404" in access
