"""Browser safety: the Host a request names and the web Origin it comes from.

Two attacks reach a server on the user's loopback port from any web page they open:

- Cross-site requests: a page can make the browser POST to ``http://127.0.0.1:2333``
  (it cannot read the answer, but the write happens). The browser says which page sent
  it in ``Origin``; a request whose Origin is not allowed is refused (403). Requests
  from programs carry no Origin and pass. JSON and Arrow routes also take only their
  own media types (`_http.media`), which no page can send without asking first.
- DNS rebinding: a page on ``evil.example`` re-points that name to 127.0.0.1 and is then
  same-origin with the server, so it can read answers too. The request still says
  ``Host: evil.example``, so the Host must be one of this server's names (400).

Allowed hosts: the loopback names (``localhost``, ``127.0.0.0/8``, ``::1``) and those
configured (``--allow-host``: the bound host name, ``*.example.com`` for subdomains,
``*`` for any). Allowed origins: those configured (``--allow-origin``), to which the
server also answers CORS preflights, and the server's own (a page it served).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from nsframe.exceptions import APIError, ForbiddenError, InvalidInputError
from nsframe.server._http.errors import error_response

LOOPBACK_NAMES = frozenset({"localhost", "localhost."})
# Headers a browser page may read from an answer, when its origin is allowed.
EXPOSED_HEADERS = ("x-transaction-id", "retry-after", "www-authenticate", "x-request-id")


def host_name(host: str) -> str:
    """The name part of a Host header: no port, no brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


@functools.lru_cache(maxsize=1024)
def is_loopback(name: str) -> bool:
    # Cached: every request asks it of its Host, and parsing an address costs ~10 us.
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which Host names and which Origins a server accepts."""

    def __init__(self, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> None:
        names = [host_name(h) for h in hosts if h.strip()]
        self.any_host = "*" in names
        self.hosts = frozenset(n for n in names if not n.startswith("*."))
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))
        self.origins = frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip())
        self.any_origin = "*" in self.origins

    def host_allowed(self, name: str) -> bool:
        return (self.any_host or name in self.hosts or is_loopback(name)
                or any(name.endswith(suffix) for suffix in self.suffixes))

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if self.any_origin or origin in self.origins:
            return True
        # The server's own origin: a page it served (it serves none today) may call it.
        return host is not None and origin in (f"http://{host.lower()}",
                                               f"https://{host.lower()}")


class BrowserGuard:
    """ASGI middleware: 400 for a foreign Host, 403 for a foreign Origin."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.policy = policy
        # Preflights and CORS headers only for the origins the operator allowed.
        self.app: ASGIApp = app if not policy.origins else CORSMiddleware(
            app, allow_origins=sorted(policy.origins), allow_methods=["GET", "POST"],
            allow_headers=["*"], expose_headers=list(EXPOSED_HEADERS),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        error = self.refusal(headers)
        if error is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await error_response(Request(scope), error)(scope, receive, send)

    def refusal(self, headers: Headers) -> APIError | None:
        host = headers.get("host")
        if host is not None and not self.policy.host_allowed(host_name(host)):
            return InvalidInputError(
                f"This server does not answer to the host name {host_name(host)!r}: call it "
                "by one of its names (127.0.0.1, localhost), or start it with "
                "--allow-host NAME. (A foreign Host is how a web page re-pointed at this "
                "address would reach it.)"
            )
        origin = headers.get("origin")
        if origin is not None and not self.policy.origin_allowed(origin, host):
            return ForbiddenError(
                f"Requests from the web origin {origin!r} are not allowed: a web page may "
                "call this server only when it is started with --allow-origin ORIGIN."
            )
        return None
