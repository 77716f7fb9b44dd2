"""The media type of a request body: JSON routes take JSON, Arrow routes take Arrow.

A web page can make the browser send a cross-site POST without asking the server first
only with a "simple" body: text/plain, form-encoded, multipart, or no type at all (a
byte buffer). If a JSON route parsed a text/plain body, any page the user opens could
delete rows from a server on their loopback port. So a body must say what it is, in a
type no page can send without a CORS preflight (which this server does not grant unless
told to, see `_security.browser`). A request without a body needs no type: upstream
clients send some POSTs bare.
"""

from __future__ import annotations

from typing import Literal

from starlette.requests import Request

from nsframe._protocol import routes
from nsframe.exceptions import APIError

# What a route's body is: JSON, an Arrow IPC stream, or nothing it reads (a listing; a
# body sent anyway must still be JSON).
Body = Literal["json", "arrow", "none"]

# application/octet-stream is what generic HTTP tools call bytes; like the Arrow type it
# needs a preflight from a browser.
ARROW_MEDIA_TYPES = frozenset({routes.ARROW_STREAM, "application/octet-stream"})


def media_type(request: Request) -> str:
    """The body's media type, lower case, without parameters ('' when not sent)."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in request.headers


def unsupported_media_type(detail: str) -> APIError:
    return APIError(detail, status=415, code=13, type="/errors/unsupported-media-type",
                    title="Unsupported Media Type")


def check_media_type(request: Request, body: Body) -> None:
    """415 when the request has a body of a type its route does not take."""
    if not has_body(request):
        return
    sent = media_type(request)
    if body == "arrow":
        if sent not in ARROW_MEDIA_TYPES:
            raise unsupported_media_type(
                f"This operation takes an Arrow IPC stream with Content-Type "
                f"{routes.ARROW_STREAM}; the body was sent as {sent or 'no type'}."
            )
    elif sent != routes.JSON and not sent.endswith("+json"):
        raise unsupported_media_type(
            f"This operation takes a JSON body with Content-Type {routes.JSON}; the body was "
            f"sent as {sent or 'no type'}."
        )
