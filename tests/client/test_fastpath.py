"""`FastPath`: requests sent through urllib3's pool directly are the requests `requests`
would have sent, and the session takes over whenever it must (proxies, cookies)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nsframe import Client
from nsframe._client.fastpath import POOL_SIZE, FastPath

from .test_http import Scripted, ok_json, scripted  # noqa: F401 - the fixture

IGNORED = {"x-request-id"}


def _sent(server: Scripted, client: Client, call: Callable[[Client], Any]) -> dict[str, Any]:
    call(client)
    request = dict(server.requests[-1])
    request["headers"] = {k.lower(): v for k, v in request["headers"].items()
                          if k.lower() not in IGNORED}
    return request


def _chunks() -> Iterator[bytes]:
    yield b"first piece "
    yield memoryview(b"second piece")  # type: ignore[misc]


@pytest.mark.parametrize("call", [
    lambda c: c.call_json("POST", "/v1/table/{id}/count_rows", "a$b c", idempotent=True,
                          json={"predicate": "x > 1"}, params={"mode": "a b", "n": 3}),
    lambda c: c.call_json("GET", "/v1/namespace/{id}/list", "a", idempotent=True,
                          params={"page_token": "t/=?"}),
    lambda c: c.call_json("POST", "/v1/table/{id}/insert", "t", idempotent=False,
                          data=_chunks(), content_type="application/vnd.apache.arrow.stream"),
    lambda c: c.call_json("POST", "/v1/table/{id}/drop", "t", idempotent=False),
    lambda c: c.call_json("POST", "/v1/tables/x", idempotent=False, data=b""),
])
def test_sends_what_requests_sends(scripted: Callable[..., Scripted],  # noqa: F811
                                   call: Callable[[Client], Any]) -> None:
    server = scripted([ok_json({"ok": 1})])
    fast = Client(server.url, api_key="key", context={"user": "u"})
    slow = Client(server.url, api_key="key", context={"user": "u"})
    slow._sender = slow._session
    assert isinstance(fast._sender, FastPath)
    assert _sent(server, fast, call) == _sent(server, slow, call)


def test_a_proxy_leaves_the_work_to_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "")
    client = Client("http://127.0.0.1:1")
    assert client._sender is client._session


def test_cookies_are_kept_and_sent(scripted: Callable[..., Scripted]) -> None:  # noqa: F811
    server = scripted([(200, {"Set-Cookie": "route=a1; Path=/"}, b"{}"), ok_json({})])
    client = Client(server.url)
    client.call_json("GET", "/v1/x", idempotent=True)
    client.call_json("GET", "/v1/x", idempotent=True)
    assert server.requests[-1]["headers"].get("Cookie") == "route=a1"


def test_many_threads_share_one_pool_without_dropping_connections(
        scripted: Callable[..., Scripted], caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    server = scripted([ok_json({})])
    client = Client(server.url)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                client.call_json("GET", "/v1/x", idempotent=True)
        except BaseException as exc:
            errors.append(exc)

    with caplog.at_level(logging.WARNING, logger="urllib3"):
        threads = [threading.Thread(target=work) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    assert len(server.requests) == 80
    assert "pool is full" not in caplog.text
    assert POOL_SIZE >= 16
