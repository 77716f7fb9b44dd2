"""Query results handed to the embedded client as Arrow data, with no IPC framing.

The embedded client's transport (`nsframe._client.inprocess`) calls the app in the same
process and says so in the scope (``ACCEPTS_ARROW``). A query whose result fits in one
plain body then answers the table itself in the body message (``ARROW_MEMBER``), after
the same validation, catalog lookup, freshness and error mapping as over HTTP: only the
IPC encoding, and the client's decoding, are skipped. Anyone else gets IPC bytes.
"""

from __future__ import annotations

import pyarrow as pa
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from nsframe._protocol.in_process import ACCEPTS_ARROW, ARROW_MEMBER
from nsframe._protocol.routes import ARROW_FILE


def accepts_arrow(request: Request) -> bool:
    return bool(request.scope.get(ACCEPTS_ARROW, False))


class ArrowResponse(Response):
    """A 200 whose body is ``table``, handed over as it is; headers as an IPC answer's,
    less the length (there are no bytes)."""

    media_type = ARROW_FILE

    def __init__(self, table: pa.Table) -> None:
        super().__init__(b"", media_type=ARROW_FILE)
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # On the status line, so that the caller has it as soon as it has the status.
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers, ARROW_MEMBER: self.table})
        await send({"type": "http.response.body", "body": b""})
