"""Errors rendered as the contract's JSON body.

Every failure leaves as the error body of spec/SEED_SPEC.md: never a stack trace, never a
server file path. The body adds the request's id (``request_id``, `request_ids`), and each
error answer gets a log line with its detail, under that id: a 500 or 507 where its cause
is logged (`unexpected`, `storage_full`), any other at INFO here.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nsframe.exceptions import APIError, ServerError
from nsframe.server._http.request_ids import request_id_of
from nsframe.server._logs import printable
from nsframe.server._storage.errors import is_full, log, storage_full, unexpected


def error_response(request: Request, error: APIError) -> Response:
    body = error.to_body()
    # The raw scope path: request.url.path goes through urlsplit, which drops control characters.
    body["instance"] = request.scope.get("path") or request.url.path
    request_id = request_id_of(request.scope)
    if request_id is not None:
        body["request_id"] = request_id
    if not isinstance(error, ServerError):  # those are logged with their cause
        log.info("answered %d %s (code %d): %s", error.status, type(error).__name__,
                 error.code, printable(error.detail))
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
