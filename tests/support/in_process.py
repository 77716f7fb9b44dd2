"""A `requests` adapter that sends a session's calls through `EmbeddedTransport`: with
``pytest --transport embedded`` the server's contract tests, written against
`requests.Session`, reach the session server's app in process instead of its socket."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from nsframe.transport import EmbeddedTransport, Timeout


class InProcessAdapter(BaseAdapter):
    """Answers a `requests.Session`'s calls from an ASGI app in this process."""

    def __init__(self, app: Any) -> None:
        super().__init__()
        self.transport = EmbeddedTransport(app)

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Mapping[str, str] | None = None) -> requests.Response:
        body = request.body
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif body is not None and not isinstance(body, bytes):
            body = iter(body)  # a generator or a file: sent chunk by chunk
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("content-length", "transfer-encoding")}
        got = self.transport.send(request.method or "GET", request.url or "", headers=headers,
                                  body=body, timeout=Timeout())
        content = got.content
        if got.arrow is not None:  # handed over as Arrow data: what HTTP would carry
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, got.arrow.schema) as writer:
                writer.write_table(got.arrow)
            content = sink.getvalue().to_pybytes()
        resp = requests.Response()
        resp.status_code = got.status_code
        resp.headers = CaseInsensitiveDict(got.headers)
        if got.arrow is not None:
            resp.headers["content-length"] = str(len(content))
        resp.encoding = get_encoding_from_headers(resp.headers)
        resp.reason = got.reason
        resp.url = request.url or ""
        resp.request = request
        resp.raw = io.BytesIO(content)
        resp._content = content  # type: ignore[attr-defined]
        resp._content_consumed = True  # type: ignore[attr-defined]
        return resp

    def close(self) -> None:
        self.transport.close()
