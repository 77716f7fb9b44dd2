"""The outermost layer: every failure becomes an answer, and no answer closes the connection.

uvicorn closes a keep-alive connection whenever the application raises, even after a
complete answer (Starlette's `ServerErrorMiddleware` sends its 500 and then re-raises, by
design). The next request a client sends on that connection then fails with a reset, and
a client that rightly never retries writes reports a transport error for a request that
was never sent. So nothing may leave this layer as an exception:

- not started: the contract's 500 body (an error in the credential check or any other
  middleware lands here);
- started but not finished (a streamed result that failed half-way): the body is ended
  cleanly, the failure logged; the client sees a truncated Arrow file, never a reset;
- finished: the failure was answered and logged already (by `handle_unexpected`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe.server._http.errors import error_response
from nsframe.server._storage.errors import answerable, log, unexpected


class ErrorGuard:
    """ASGI middleware: an exception from ``app`` never reaches the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except BaseException as exc:
            if not answerable(exc):  # cancellation, or the server shutting down
                raise
            if finished:
                return  # answered (and logged) by the app's own error handler
            if started:
                log.error("the answer to %s %r failed after it started; ending it",
                          scope.get("method"), scope.get("path"), exc_info=exc)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            error = unexpected(exc, f"on {scope.get('method')} {scope.get('path')!r}")
            await error_response(Request(scope), error)(scope, receive, send)
