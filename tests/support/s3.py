"""An S3 endpoint on loopback for the tests: moto's server mode, in a process of its own.

moto is a pip package (``moto[server]``); nothing here downloads a binary. The server
also speaks DynamoDB, which ``s3+ddb://`` roots use for commits. `Proxy` sits between a
client and the endpoint to count requests or, as a broken store would, to drop the
``If-None-Match`` header of conditional writes.
"""

from __future__ import annotations

import http.client
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import requests

from tests.support.relay import RelayHandler

REGION = "us-east-1"
# Fake credentials: moto checks none, but they must never show in logs or answers.
ACCESS_KEY = "nsframe-test-access-key"
SECRET_KEY = "nsframe-test-secret-5d1c2e9f"
START_SECONDS = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class S3Endpoint:
    """Where the test store answers, one bucket of it, and the options to reach it."""

    url: str
    bucket: str
    access_key: str = ACCESS_KEY
    secret_key: str = field(default=SECRET_KEY, repr=False)
    region: str = REGION

    def options(self) -> dict[str, str]:
        """Storage options in Lance's names (also nsframe's)."""
        return {"aws_access_key_id": self.access_key, "aws_secret_access_key": self.secret_key,
                "aws_region": self.region, "aws_endpoint": self.url, "allow_http": "true",
                "dynamodb_endpoint": self.url}

    def env(self) -> dict[str, str]:
        """The same, as the standard environment variables."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region, "AWS_ENDPOINT_URL": self.url,
                "AWS_ALLOW_HTTP": "true", "AWS_ENDPOINT_URL_DYNAMODB": self.url}

    def new_root(self, name: str = "") -> str:
        """A fresh prefix of the bucket: ``s3://bucket/<name>-<uuid>``."""
        return f"s3://{self.bucket}/{name or 'root'}-{uuid.uuid4().hex[:12]}"

    def through(self, url: str) -> S3Endpoint:
        """The same bucket, reached at ``url`` (a proxy in front of the endpoint)."""
        return replace(self, url=url)

    def client(self, service: str = "s3") -> Any:
        import boto3

        return boto3.client(service, endpoint_url=self.url, region_name=self.region,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def create_bucket(self) -> None:
        self.client().create_bucket(Bucket=self.bucket)

    def create_commit_table(self, name: str) -> None:
        """A DynamoDB table as Lance's s3+ddb commits (and nsframe's catalog) expect."""
        self.client("dynamodb").create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                       {"AttributeName": "version", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                                  {"AttributeName": "version", "AttributeType": "N"}],
            BillingMode="PAY_PER_REQUEST",
        )


@contextmanager
def moto_server(log_dir: Path, *, check_credentials_after: int | None = None
                ) -> Iterator[str]:
    """moto's server on a free loopback port, for the ``with`` block; yields its URL.

    moto checks no credentials, unless ``check_credentials_after`` is given: then it
    answers that many requests without checking, and refuses every later request whose
    access key it does not know (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``).
    """
    checks = ({} if check_credentials_after is None
              else {"INITIAL_NO_AUTH_ACTION_COUNT": str(check_credentials_after)})
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "moto.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **checks},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"moto exited with {proc.returncode}; see {log_dir}/moto.log")
            with suppress(requests.RequestException):
                if requests.get(f"{url}/moto-api/", timeout=2).status_code < 500:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto did not start within {START_SECONDS:.0f}s")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# ------------------------------------------------------------------------ proxy
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade"}


def _kind(command: str, path: str, headers: dict[str, str]) -> str:
    """LIST, GET, PUT, HEAD, DELETE (bulk deletes too) or DYNAMODB."""
    if any(k.lower() == "x-amz-target" for k in headers):
        return "DYNAMODB"
    if command == "GET" and "list-type=" in path:
        return "LIST"
    if command == "POST" and "?delete" in path:
        return "DELETE"
    return command


class Proxy:
    """An HTTP proxy on loopback that forwards to ``upstream`` and counts requests.

    ``strip_if_none_match`` makes it drop that header, as some proxies and S3-compatible
    stores do: conditional creates then silently overwrite.
    """

    def __init__(self, upstream: str, *, strip_if_none_match: bool = False) -> None:
        self.upstream = upstream.removeprefix("http://").rstrip("/")
        self.strip_if_none_match = strip_if_none_match
        self.counts: Counter[str] = Counter()
        self.stripped = 0
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="s3-proxy")

    def __enter__(self) -> Proxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def _note(self, kind: str, stripped: bool) -> None:
        with self._lock:
            self.counts[kind] += 1
            self.stripped += stripped

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self

        class Handler(RelayHandler):
            upstream: http.client.HTTPConnection | None = None

            def _forward(self) -> None:
                body = self.read_body()
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_BY_HOP}
                stripped = False
                if proxy.strip_if_none_match:
                    for name in [k for k in headers if k.lower() == "if-none-match"]:
                        del headers[name]
                        stripped = True
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                proxy._note(_kind(self.command, self.path, headers), stripped)
                for attempt in range(2):
                    if self.upstream is None:
                        self.upstream = http.client.HTTPConnection(proxy.upstream, timeout=120)
                        self.upstream.connect()
                        assert self.upstream.sock is not None
                        self.upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    try:
                        self.upstream.request(self.command, self.path, body=body,
                                              headers=headers)
                        answer = self.upstream.getresponse()
                        data = answer.read()
                        break
                    except (http.client.HTTPException, OSError):
                        self.upstream.close()
                        self.upstream = None
                        if attempt:
                            raise
                self.send_response(answer.status, answer.reason)
                head = self.command == "HEAD"  # its Content-Length is the object's size
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and (head or name.lower() !=
                                                           "content-length"):
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        return Handler
