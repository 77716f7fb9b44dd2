"""Request ids (issue 27): each request keeps the caller's ``x-request-id`` (a plausible
one) or gets a new one; every answer sends it back, error bodies hold it, and every line
logged for the request carries it, worker threads' lines included."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import anyio.to_thread
import pyarrow as pa
import pytest
import requests
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from nsframe.server import serve_in_thread
from nsframe.server._http.request_ids import RequestIds
from nsframe.server._logs import JsonFormatter, RequestIdFilter, logging_config
from tests.support import ARROW_HEADERS, assert_error, ipc_stream
from tests.support.hostile import ARROW_STREAM, open_request, schema_message

NEW_ID = re.compile(r"[0-9a-f]{32}")
HOSTILE = [
    "two words",
    'quoted"id',
    "<script>alert(1)</script>",
    "%0a2026-01-01 00:00:00,000 nsframe.server.access INFO forged",
    "x" * 10_000,
    "x" * 129,
    "caf\u00e9",  # sent as Latin-1, beyond ASCII
    "",
]


def test_the_callers_id_comes_back_unchanged_on_answers_and_errors(
        base_url: str, http: requests.Session, ns: str) -> None:
    given = "lb-7f3a.2026:11/26+run=1@edge_0"
    ok = http.post(f"{base_url}/v1/namespace/{ns}/describe", json={},
                   headers={"x-request-id": given})
    assert ok.status_code == 200 and ok.headers["x-request-id"] == given
    missing = http.post(f"{base_url}/v1/table/{ns}$missing/describe", json={},
                        headers={"x-request-id": given})
    body = assert_error(missing, 404, 4)
    assert body["request_id"] == given and missing.headers["x-request-id"] == given


def test_a_request_without_an_id_gets_a_new_one_per_request(
        base_url: str, http: requests.Session, ns: str) -> None:
    ids = [http.post(f"{base_url}/v1/namespace/{ns}/exists", json={}).headers["x-request-id"]
           for _ in range(3)]
    assert all(NEW_ID.fullmatch(i) for i in ids) and len(set(ids)) == 3


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: repr(h[:20]))
def test_a_hostile_id_is_replaced_not_echoed(base_url: str, http: requests.Session,
                                             hostile: str) -> None:
    resp = http.post(f"{base_url}/v1/table/nowhere$t/count_rows", json={},
                     headers={"x-request-id": hostile.encode("latin-1")})
    body = assert_error(resp, 404)
    assert NEW_ID.fullmatch(resp.headers["x-request-id"])
    assert body["request_id"] == resp.headers["x-request-id"]
    assert hostile not in resp.text or hostile == ""


def test_every_kind_of_answer_carries_the_id(base_url: str, http: requests.Session,
                                             ns: str) -> None:
    made = http.post(f"{base_url}/v1/table/{ns}$t/create", headers=ARROW_HEADERS,
                     data=ipc_stream({"id": [1, 2, 3]}))
    assert made.status_code == 200, made.text
    answers = {
        "unknown path": http.post(f"{base_url}/v1/no/such/route", json={}),
        "method": http.get(f"{base_url}/v1/table/{ns}$t/describe"),
        "bad json": http.post(f"{base_url}/v1/table/{ns}$t/describe", data=b"{",
                              headers={"Content-Type": "application/json"}),
        "bad member": http.post(f"{base_url}/v1/table/{ns}$t/query", json={"k": "ten"}),
        "streamed": http.post(f"{base_url}/v1/table/{ns}$t/query", json={"k": 2}),
    }
    for what, resp in answers.items():
        sent = resp.request.headers.get("x-request-id")
        assert sent is None
        rid = resp.headers.get("x-request-id", "")
        assert NEW_ID.fullmatch(rid), what
        if resp.status_code >= 400:
            assert resp.json()["request_id"] == rid, what
    assert answers["streamed"].status_code == 200


def test_auth_failures_and_overload_answers_carry_the_id(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    limits = {"upload_slots": 1, "queue_timeout": 0.3}
    with serve_in_thread(tmp_path, api_keys=["k" * 20], limits=limits) as server:
        refused = requests.post(f"{server.url}/v1/namespace/a/create", json={},
                                headers={"x-request-id": "auth-1"})
        assert assert_error(refused, 401, 16)["request_id"] == "auth-1"
        assert refused.headers["x-request-id"] == "auth-1"
        key = {"x-api-key": "k" * 20}
        assert requests.post(f"{server.url}/v1/namespace/a/create", json={},
                             headers=key).status_code == 200
        made = requests.post(f"{server.url}/v1/table/a$t/create",
                             data=ipc_stream({"id": [1]}, schema=schema),
                             headers={**ARROW_HEADERS, **key})
        assert made.status_code == 200, made.text
        # An insert that sends its schema and stalls holds the one upload slot.
        with open_request(server.url, "/v1/table/a$t/insert", body=schema_message(schema),
                          headers={"Content-Type": ARROW_STREAM, **key,
                                   "Content-Length": str(100_000_000)}):
            time.sleep(0.3)
            busy = requests.post(f"{server.url}/v1/table/a$t/insert",
                                 data=ipc_stream({"id": [2]}, schema=schema),
                                 headers={**ARROW_HEADERS, **key, "x-request-id": "busy-1"},
                                 timeout=10)
        body = assert_error(busy, 503, 17)
        assert body["request_id"] == "busy-1" and busy.headers["x-request-id"] == "busy-1"


def test_every_line_logged_for_a_request_names_it(
        base_url: str, http: requests.Session, ns: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="nsframe")
    resp = http.post(f"{base_url}/v1/table/{ns}$missing/count_rows", json={},
                     headers={"x-request-id": "trace-404"})
    assert resp.status_code == 404
    mine = [r for r in caplog.records if getattr(r, "request_id", None) == "trace-404"]
    names = sorted({r.name for r in mine})
    assert names == ["nsframe.server", "nsframe.server.access"], names
    error_line = next(r for r in mine if r.name == "nsframe.server")
    assert "TableNotFoundError" in error_line.getMessage()
    assert f"{ns}$missing" in error_line.getMessage()
    access = next(r for r in mine if r.name == "nsframe.server.access")
    assert access.nsframe["request_id"] == "trace-404"  # type: ignore[attr-defined]


def test_lines_logged_in_worker_threads_and_streams_carry_the_id(
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("nsframe.server")

    def work() -> str:
        log.info("in a worker thread")
        return "done"

    async def endpoint(request: Request) -> PlainTextResponse:
        log.info("on the event loop")
        return PlainTextResponse(await anyio.to_thread.run_sync(work))

    app = RequestIds(Starlette(routes=[Route("/", endpoint)]))
    caplog.set_level(logging.INFO, logger="nsframe.server")
    from starlette.testclient import TestClient

    with TestClient(app) as client:
        for rid in ("first-1", "second-2"):
            assert client.get("/", headers={"x-request-id": rid}).headers["x-request-id"] == rid
    seen = [(r.getMessage(), getattr(r, "request_id", None)) for r in caplog.records]
    assert seen == [("on the event loop", "first-1"), ("in a worker thread", "first-1"),
                    ("on the event loop", "second-2"), ("in a worker thread", "second-2")]
    outside = logging.LogRecord("nsframe.server", logging.INFO, __file__, 1, "after", None,
                                None)
    RequestIdFilter().filter(outside)
    assert outside.request_id is None  # type: ignore[attr-defined]


def test_the_json_format_has_the_access_fields() -> None:
    record = logging.LogRecord("nsframe.server.access", logging.INFO, __file__, 1,
                               "POST /v1/x 404", None, None)
    record.request_id = "r-1"
    record.nsframe = {"method": "POST", "path": "/v1/x\n", "status": 404,
                      "duration_ms": 1.5, "database": "-", "principal": "dashboard",
                      "context": {}, "request_id": "r-1"}
    line = JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert {k: parsed[k] for k in ("level", "logger", "message", "request_id", "method",
                                   "path", "status", "duration_ms", "credential")} == {
        "level": "INFO", "logger": "nsframe.server.access", "message": "POST /v1/x 404",
        "request_id": "r-1", "method": "POST", "path": "/v1/x\n", "status": 404,
        "duration_ms": 1.5, "credential": "dashboard"}
    assert parsed["time"].endswith("+00:00")


def test_a_log_format_other_than_text_or_json_is_refused() -> None:
    with pytest.raises(ValueError, match="log_format"):
        logging_config("info", "yaml")


def test_log_format_from_the_flag_and_the_config_file(tmp_path: Path) -> None:
    from nsframe.server._config import ServerConfig
    from nsframe.server._config_file import config_from_argv, load_config_file

    file = tmp_path / "nsframe.toml"
    file.write_text('log_format = "json"\n')
    assert load_config_file(file).log_format == "json"
    assert config_from_argv([], {}).log_format == "text"
    flag = config_from_argv(["--config", str(file), "--log-format", "text"], {})
    assert flag.log_format == "text"  # the flag wins over the file
    assert config_from_argv([], {"NSFRAME_LOG_FORMAT": "json"}).log_format == "json"
    assert "log_format='json'" in repr(ServerConfig(log_format="json"))
    file.write_text('log_format = "yaml"\n')
    with pytest.raises(ValueError, match="log_format"):
        load_config_file(file)
    with pytest.raises(ValueError, match="log_format"):
        ServerConfig(log_format="yaml")
    with pytest.raises((SystemExit, ValueError)):
        config_from_argv(["--log-format", "yaml"], {})
