"""`RetryConfig` and `TimeoutConfig`: the same retries on every sender, timeouts apart.

Statuses come from a small real HTTP server on loopback (http.server in a thread) that
answers a script, and, for the in-process sender, from an ASGI app answering the same
script; timeouts from real sockets. The embedded server is the real one.
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import nsframe
from nsframe import Client, RetryConfig, TimeoutConfig
from nsframe.exceptions import (
    RequestTimeoutError,
    ServerError,
    ServiceUnavailableError,
    TooManyRequestsError,
    TransportError,
)
from nsframe.transport import EmbeddedTransport, HTTPTransport

Answer = tuple[int, dict[str, str], bytes]
SENDERS = ("http", "embedded")
QUICK = RetryConfig(retries=3, backoff_factor=0.01, backoff_jitter=0.01)


def answer(status: int, retry_after: str | None = None) -> Answer:
    if status == 200:
        return 200, {"Content-Type": "application/json"}, b'{"properties": {}}'
    body = {"type": "/errors/x", "title": "T", "status": status, "detail": f"said {status}",
            "instance": "/v1/x", "code": 17, "error": f"said {status}"}
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return status, headers, json.dumps(body).encode()


class Script:
    """Answers in order (the last repeats), with the time each request came."""

    def __init__(self, answers: list[Answer], drop_first: int = 0) -> None:
        self.answers = answers
        self.drop_first = drop_first
        self.times: list[float] = []
        self.methods: list[str] = []

    def next(self, method: str) -> Answer | None:
        self.times.append(time.monotonic())
        self.methods.append(method)
        n = len(self.times)
        if n <= self.drop_first:
            return None
        return self.answers[min(n - self.drop_first, len(self.answers)) - 1]

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


def http_server(script: Script) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got = script.next(self.command)
            if got is None:  # the connection breaks after the request was sent
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            status, headers, body = got
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def asgi_app(script: Script) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        got = script.next(scope["method"])
        assert got is not None
        status, headers, body = got
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]})
        await send({"type": "http.response.body", "body": body})
    return app


@pytest.fixture
def client_for() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []
    clients: list[Client] = []

    def make(sender: str, script: Script, **options: Any) -> Client:
        if sender == "embedded":
            url = "http://127.0.0.1:9"  # never dialled: the app answers in process
            client = Client(url, transport=EmbeddedTransport(asgi_app(script)), **options)
        else:
            server = http_server(script)
            servers.append(server)
            client = Client(f"http://127.0.0.1:{server.server_address[1]}", **options)
            assert isinstance(client.transport, HTTPTransport)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
    for server in servers:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------ statuses
@pytest.mark.parametrize("sender", SENDERS)
def test_retries_are_counted(sender: str, client_for: Any) -> None:
    script = Script([answer(503, "0")])
    client = client_for(sender, script, retry_config=RetryConfig(retries=2))
    with pytest.raises(ServiceUnavailableError, match="said 503"):
        client.describe_namespace("db")
    assert len(script.times) == 3


@pytest.mark.parametrize("sender", SENDERS)
def test_default_statuses_include_502_and_504(sender: str, client_for: Any) -> None:
    script = Script([answer(502), answer(504), answer(429, "0"), answer(200)])
    client = client_for(sender, script, retry_config=QUICK)
    assert client.describe_namespace("db") == {"properties": {}}
    assert len(script.times) == 4


@pytest.mark.parametrize("sender", SENDERS)
def test_statuses_are_configurable(sender: str, client_for: Any) -> None:
    script = Script([answer(429, "0"), answer(200)])
    client = client_for(sender, script, retry_config=RetryConfig(statuses=[503]))
    with pytest.raises(TooManyRequestsError):
        client.describe_namespace("db")
    assert len(script.times) == 1


@pytest.mark.parametrize("sender", SENDERS)
def test_backoff_waits_at_least_its_factor(sender: str, client_for: Any) -> None:
    script = Script([answer(502)])
    config = RetryConfig(retries=3, backoff_factor=0.05, backoff_jitter=0.05)
    with pytest.raises(ServerError):
        client_for(sender, script, retry_config=config).describe_namespace("db")
    # urllib3's formula: at once, then factor * 2, factor * 4 (plus jitter).
    assert len(script.times) == 4
    assert script.gaps[1] >= 0.1 and script.gaps[2] >= 0.2, script.gaps


def test_backoff_and_jitter_are_bounded() -> None:
    config = RetryConfig(retries=5, backoff_factor=0.5, backoff_jitter=0.25)
    policy = config.policy()
    for n in range(1, 6):
        policy = policy.increment("GET", "/x")
        waits = [policy.get_backoff_time() for _ in range(200)]
        base = 0.0 if n == 1 else min(0.5 * 2 ** (n - 1), 30.0)
        jitter = 0.0 if n == 1 else 0.25
        assert all(base <= w <= base + jitter for w in waits), (n, min(waits), max(waits))
        if jitter:
            assert max(waits) - min(waits) > 0.05  # the jitter is really random


@pytest.mark.parametrize("sender", SENDERS)
def test_retry_after_is_honoured_within_the_deadline(sender: str, client_for: Any) -> None:
    script = Script([answer(503, "1"), answer(200)])
    client = client_for(sender, script, retry_config=QUICK,
                        timeout_config=TimeoutConfig(timeout=10))
    assert client.describe_namespace("db") == {"properties": {}}
    assert len(script.times) == 2 and script.gaps[0] >= 0.95, script.gaps


@pytest.mark.parametrize("sender", SENDERS)
def test_retry_after_past_the_deadline_is_refused(sender: str, client_for: Any) -> None:
    script = Script([answer(503, "20"), answer(200)])
    client = client_for(sender, script, retry_config=QUICK,
                        timeout_config=TimeoutConfig(timeout=2))
    with pytest.raises(ServiceUnavailableError) as info:
        client.describe_namespace("db")
    assert {k.lower(): v for k, v in info.value.headers.items()}["retry-after"] == "20"
    assert len(script.times) == 1  # the 20 s were not waited for


@pytest.mark.parametrize("sender", SENDERS)
def test_a_long_retry_after_is_not_cut_to_fit(sender: str, client_for: Any) -> None:
    # Waits are capped at 30 s; the server's 40 s is compared with the deadline before
    # the cap, so the call does not come back early after 30 s to be refused again.
    script = Script([answer(503, "40"), answer(200)])
    client = client_for(sender, script, retry_config=QUICK,
                        timeout_config=TimeoutConfig(timeout=35))
    with pytest.raises(ServiceUnavailableError):
        client.describe_namespace("db")
    assert len(script.times) == 1


@pytest.mark.parametrize("sender", SENDERS)
def test_writes_are_not_retried(sender: str, client_for: Any) -> None:
    script = Script([answer(503, "0")])
    client = client_for(sender, script, retry_config=QUICK)
    with pytest.raises(ServiceUnavailableError):
        client.create_namespace("db")
    with pytest.raises(ServiceUnavailableError):
        client.drop_table("db$t")
    assert len(script.times) == 2 and script.methods == ["POST", "POST"]


@pytest.mark.parametrize("sender", ("http",))  # in process, no connection can break
def test_read_retries_count_broken_connections(sender: str, client_for: Any) -> None:
    # The first break is retried once, at once, on a fresh connection (a stale
    # keep-alive); the next ones spend read_retries.
    script = Script([answer(200)], drop_first=3)
    client = client_for(sender, script,
                        retry_config=RetryConfig(retries=5, read_retries=1, backoff_factor=0))
    with pytest.raises(TransportError):
        client.describe_namespace("db")
    assert len(script.times) == 3
    script = Script([answer(200)], drop_first=3)
    client = client_for(sender, script,
                        retry_config=RetryConfig(retries=5, read_retries=2, backoff_factor=0))
    assert client.describe_namespace("db") == {"properties": {}}
    assert len(script.times) == 4


# ------------------------------------------------------------------ timeouts
@pytest.fixture
def silent_url() -> Iterator[str]:
    """A port that takes connections (the kernel's backlog) but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_read_timeout_is_not_the_connect_timeout(silent_url: str) -> None:
    client = Client(silent_url, timeout_config=TimeoutConfig(connect_timeout=30,
                                                            read_timeout=0.3))
    with pytest.raises(RequestTimeoutError, match=r"no answer within 0\.3s"):
        client.describe_namespace("db")


@pytest.fixture
def full_backlog_url() -> Iterator[str]:
    """A port whose accept queue is full: the kernel drops new SYNs, so connecting hangs
    (a real connect timeout, on loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(0)
        port = sock.getsockname()[1]
        fillers = []
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))  # in progress: no wait
            fillers.append(filler)
        time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
        for filler in fillers:
            filler.close()


def test_connect_timeout_is_not_the_read_timeout(full_backlog_url: str) -> None:
    client = Client(full_backlog_url, retry_config=RetryConfig(retries=0),
                    timeout_config=TimeoutConfig(connect_timeout=0.3, read_timeout=30))
    with pytest.raises(RequestTimeoutError, match=r"could not connect within 0\.3s"):
        client.create_namespace("db")  # never sent, so not "may have been committed"


def test_deadline_cuts_the_read_timeout(silent_url: str) -> None:
    client = Client(silent_url, timeout_config=TimeoutConfig(timeout=0.3, read_timeout=30))
    with pytest.raises(RequestTimeoutError, match=r"0\.3s"):
        client.describe_namespace("db")


def test_closed_port_is_a_connect_error(closed_url: str) -> None:
    client = Client(closed_url, retry_config=RetryConfig(retries=1, backoff_factor=0),
                    timeout_config=TimeoutConfig(read_timeout=0.1))
    with pytest.raises(TransportError, match="could not talk to the server") as info:
        client.create_namespace("db")  # never reached the server: a write may be resent
    assert not isinstance(info.value, RequestTimeoutError)


# ------------------------------------------------------------------ connect()
def test_connect_takes_the_configs_to_the_embedded_server() -> None:
    retry = RetryConfig(retries=1, backoff_factor=0.5)
    timeouts = TimeoutConfig(timeout=timedelta(seconds=30), read_timeout=20)
    with nsframe.connect(tempfile.mkdtemp(), retry_config=retry,
                         timeout_config=timeouts) as conn:
        assert conn.client.retry_config is retry
        assert conn.client.timeout_config == TimeoutConfig(timeout=30, read_timeout=20)
        assert isinstance(conn.client.transport, EmbeddedTransport)
        assert conn.create_table("t", {"id": [1, 2]}).count_rows() == 2


def test_a_tuned_connection_works_against_the_real_server(base_url: str, ns: str) -> None:
    retry = RetryConfig(retries=2, read_retries=1, backoff_factor=0.01, backoff_jitter=0.01)
    timeouts = TimeoutConfig(timeout=30, connect_timeout=5, read_timeout=10)
    with nsframe.connect(base_url, retry_config=retry, timeout_config=timeouts) as conn:
        assert isinstance(conn.client.transport, HTTPTransport)
        table = conn.create_table(f"{ns}$t", {"id": [1, 2, 3]})
        table.insert({"id": [4]})
        assert table.count_rows() == 4
        assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]


def test_flat_arguments_are_shorthands() -> None:
    with nsframe.connect(tempfile.mkdtemp(), timeout=5, retries=2) as conn:
        assert conn.client.timeout_config == TimeoutConfig(timeout=5, connect_timeout=5,
                                                           read_timeout=5)
        assert conn.client.retry_config == RetryConfig(retries=2)
    client = Client("http://127.0.0.1:9", retries=4, backoff=0.1)
    assert client.retry_config == RetryConfig(retries=4, backoff_factor=0.1)
    client.backoff = 0.01
    assert client.retry_config.backoff_factor == 0.01


@pytest.mark.parametrize(("make", "message"), [
    (lambda: RetryConfig(retries=-1), r"retries=\.\.\.\) must be a whole number >= 0"),
    (lambda: RetryConfig(read_retries=1.5),  # type: ignore[arg-type]
     r"read_retries=.*whole number"),
    (lambda: RetryConfig(backoff_factor=-0.1), r"backoff_factor=.*seconds >= 0"),
    (lambda: RetryConfig(statuses=[200, 503]), r"statuses 400-599.*200"),
    (lambda: RetryConfig(statuses="503"),  # type: ignore[arg-type]
     r"collection of HTTP status codes"),
    (lambda: TimeoutConfig(read_timeout="5"),  # type: ignore[arg-type]
     r"read_timeout=.*seconds >= 0"),
    (lambda: TimeoutConfig(timeout=float("inf")), r"timeout=.*or None for no limit"),
    (lambda: nsframe.connect("http://127.0.0.1:9", retries=5, retry_config=RetryConfig()),
     r"retries= or retry_config=, not both"),
    (lambda: nsframe.connect("http://127.0.0.1:9", timeout=5,
                             timeout_config=TimeoutConfig()),
     r"timeout= or timeout_config=, not both"),
])
def test_validation_errors(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_config_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match=r"takes an nsframe\.RetryConfig, got dict"):
        nsframe.connect("http://127.0.0.1:9", retry_config={"retries": 1})  # type: ignore[arg-type]


def test_configs_are_frozen() -> None:
    with pytest.raises(AttributeError):
        RetryConfig().retries = 9  # type: ignore[misc]
    assert TimeoutConfig(read_timeout=timedelta(milliseconds=1500)).read_timeout == 1.5
