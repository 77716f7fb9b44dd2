"""Errors rendered as the contract's JSON body.

Every failure leaves as the error body of spec/SEED_SPEC.md: never a stack trace, never a
server file path.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nsframe.exceptions import APIError
from nsframe.server._storage.errors import is_full, storage_full, unexpected


def error_response(request: Request, error: APIError) -> Response:
    body = error.to_body()
    # The raw scope path: request.url.path goes through urlsplit, which drops control characters.
    body["instance"] = request.scope.get("path") or request.url.path
    headers = dict(error.headers)
    return JSONResponse(body, status_code=error.status, headers=headers)


async def handle_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return error_response(request, exc)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    # Only errors from Lance calls are translated (inside `lance_errors`); anything else
    # reaching here is our own bug, so it is a 500 whatever its class, but for a full
    # store, which is no bug wherever the write was (a spooled body, a log file).
    if is_full(exc):
        return error_response(request, storage_full(exc))
    return error_response(request, unexpected(exc, f"on {request.method} {request.url.path}"))
