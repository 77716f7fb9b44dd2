"""A small round-robin load balancer on loopback, in front of several ``nsframe serve``
replicas, as an operator would put one: each request goes to the next backend in turn.

With ``ready_path`` it also health-checks the backends, as load balancers do: a backend
whose readiness answer is not 200 gets no new requests until it answers 200 again.
"""

from __future__ import annotations

import http.client
import http.server
import itertools
import threading
import time
from collections import Counter
from collections.abc import Sequence

from tests.support.relay import RelayHandler

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "transfer-encoding", "upgrade", "content-length"}


class Balancer:
    """Forwards each request to the next of ``backends`` (``http://host:port``)."""

    def __init__(self, backends: Sequence[str], *, ready_path: str | None = None,
                 check_every: float = 0.1, timeout: float = 60.0) -> None:
        self.backends = [b.removeprefix("http://").rstrip("/") for b in backends]
        self.ready_path = ready_path
        self.check_every = check_every
        self.timeout = timeout
        self.sent: Counter[str] = Counter()  # backend -> requests forwarded
        self._ready = set(self.backends)
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._threads = [threading.Thread(target=self._server.serve_forever, daemon=True,
                                          name="balancer")]
        if ready_path is not None:
            self._threads.append(threading.Thread(target=self._check, daemon=True,
                                                  name="balancer-checks"))

    def __enter__(self) -> Balancer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def ready(self) -> set[str]:
        """The backends that get new requests now."""
        with self._lock:
            return set(self._ready)

    def _next(self) -> str | None:
        with self._lock:
            for _ in range(len(self.backends)):
                backend = self.backends[next(self._turn) % len(self.backends)]
                if backend in self._ready:
                    self.sent[backend] += 1
                    return backend
        return None

    def _check(self) -> None:
        assert self.ready_path is not None
        while not self._stopped.is_set():
            for backend in self.backends:
                ok = _status(backend, self.ready_path) == 200
                with self._lock:
                    (self._ready.add if ok else self._ready.discard)(backend)
            time.sleep(self.check_every)

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        balancer = self

        class Handler(RelayHandler):
            def _forward(self) -> None:
                body = self.read_body()
                backend = balancer._next()
                if backend is None:
                    self._answer(503, [("Retry-After", "1")], b"no backend is ready\n")
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_BY_HOP}
                headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(backend, timeout=balancer.timeout)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
                    self._answer(resp.status, kept, data)
                except OSError:
                    self._answer(502, [], b"the backend did not answer\n")
                finally:
                    conn.close()

            def _answer(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        return Handler


def _status(backend: str, path: str) -> int:
    conn = http.client.HTTPConnection(backend, timeout=2)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()
