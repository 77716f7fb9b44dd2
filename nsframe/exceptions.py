"""Every exception nsframe raises, on the client and in the server.

```
NsframeError                      base: `except nsframe.NsframeError` catches everything we raise
├── TransportError                could not talk to the server
│   ├── RequestTimeoutError
│   └── ConnectionClosedError     the connection was closed (conn.close())
├── ResponseDecodeError           2xx, but the body is not what the contract says
├── ReadOnlyTableError            a write to a version or tag view (also a ValueError)
├── VectorDimensionError          vectors of the wrong size for a table (also a ValueError)
├── PartialWriteError             a write in several requests failed after some committed
├── StorageOptionsNotVendedError  the server hands out no storage options (also a LookupError)
└── APIError                      the server answered 4xx/5xx (or, in the server, will answer)
    ├── InvalidInputError         400, code 13
    │   └── SchemaMismatchError   400, code 20
    ├── UnauthorizedError         401, code 16
    ├── ForbiddenError            403, code 15
    ├── NotFoundError             404
    │   ├── NamespaceNotFoundError    code 1
    │   ├── TableNotFoundError        code 4
    │   ├── IndexNotFoundError        code 6
    │   ├── TagNotFoundError          code 8
    │   ├── TransactionNotFoundError  code 10
    │   ├── VersionNotFoundError      code 11
    │   ├── ColumnNotFoundError       code 12
    │   └── BranchNotFoundError       code 22
    ├── UnsupportedError          406, code 0
    ├── ConflictError             409
    │   ├── AlreadyExistsError        (NamespaceAlreadyExists 2, TableAlreadyExists 5, ...)
    │   ├── NamespaceNotEmptyError    code 3
    │   ├── ConcurrentModificationError code 14
    │   └── InvalidTableStateError    code 19
    ├── PayloadTooLargeError      413 (code 13, InvalidInput's)
    ├── TooManyRequestsError      429, code 21
    ├── ServiceUnavailableError   503, code 17
    └── ServerError               500, code 18
        └── StorageFullError      507 (code 18, Internal's)
```

The server renders these classes into the error body of the contract, and the client maps
error bodies back onto them, so the two sides share one table and cannot drift apart.
Every class pickles with its attributes (for multiprocessing, joblib, dask). This module
imports nothing but the standard library.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "APIError",
    "AlreadyExistsError",
    "BranchAlreadyExistsError",
    "BranchNotFoundError",
    "ColumnNotFoundError",
    "ConcurrentModificationError",
    "ConflictError",
    "ConnectionClosedError",
    "ForbiddenError",
    "IndexAlreadyExistsError",
    "IndexNotFoundError",
    "InvalidInputError",
    "InvalidTableStateError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NotFoundError",
    "NsframeError",
    "PartialWriteError",
    "PayloadTooLargeError",
    "ReadOnlyTableError",
    "RequestTimeoutError",
    "ResponseDecodeError",
    "SchemaMismatchError",
    "ServerError",
    "ServiceUnavailableError",
    "StorageFullError",
    "StorageOptionsNotVendedError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TagAlreadyExistsError",
    "TagNotFoundError",
    "TooManyRequestsError",
    "TransactionNotFoundError",
    "TransportError",
    "UnauthorizedError",
    "UnsupportedError",
    "VectorDimensionError",
    "VersionNotFoundError",
    "error_class_for",
]


class NsframeError(Exception):
    """Base class of everything nsframe raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt without calling __init__, so that classes with keyword-only arguments
        # (PartialWriteError) unpickle too, with every attribute as it was.
        return (_restore, (type(self), self.args, self._picklable_state()))

    def _picklable_state(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _restore(cls: type[NsframeError], args: tuple[Any, ...],
             state: dict[str, Any]) -> NsframeError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class TransportError(NsframeError):
    """The server could not be reached, or the connection broke mid-request."""


class RequestTimeoutError(TransportError):
    """The server did not answer within the timeout."""


class ConnectionClosedError(TransportError):
    """The connection was closed (``conn.close()``, or the end of its ``with`` block), so
    the handles made from it cannot reach the server any more."""


class ResponseDecodeError(NsframeError):
    """The server answered 2xx, but the body is not the JSON or Arrow the contract promises."""


class ReadOnlyTableError(NsframeError, ValueError):
    """A write was sent to a handle pinned at a version or tag (raised before sending)."""


class VectorDimensionError(NsframeError, ValueError):
    """Vectors to insert do not have the size of the table's vector column (raised before
    anything is sent).

    Attributes:
        table: The table id.
        column: The vector column.
        expected: The column's dimension.
        found: The size of the first vector that does not fit.
        row: The position of that vector in the data.
    """

    def __init__(self, message: str, *, table: str, column: str, expected: int, found: int,
                 row: int | None) -> None:
        super().__init__(message)
        self.table = table
        self.column = column
        self.expected = expected
        self.found = found
        self.row = row


class PartialWriteError(NsframeError):
    """A write sent in several requests failed after some of them were committed.

    Attributes:
        table: The table id.
        rows_committed: Rows written (or deleted) by the requests that succeeded.
        chunks_committed: How many requests succeeded.
        version: The table version after the last request that succeeded.
    """

    def __init__(self, message: str, *, table: str, rows_committed: int,
                 chunks_committed: int, version: int | None) -> None:
        super().__init__(message)
        self.table = table
        self.rows_committed = rows_committed
        self.chunks_committed = chunks_committed
        self.version = version


class StorageOptionsNotVendedError(NsframeError, LookupError):
    """A table's storage options were asked for, but the server does not hand them out:
    its operator has not turned on ``vend_storage_options`` (raised by the client)."""


# Members of the error body's `type`, keyed by HTTP status (spec/SEED_SPEC.md "Errors").
ERROR_TYPES: dict[int, tuple[str, str]] = {
    400: ("/errors/bad-request", "Malformed request"),
    401: ("/errors/unauthorized-request", "No valid authentication credentials for the operation"),
    403: ("/errors/forbidden-request", "Not authorized to make this request"),
    404: ("/errors/not-found-error", "Not found Error"),
    406: ("/errors/unsupported-operation", "Unsupported operation"),
    409: ("/errors/conflict", "Conflict"),
    413: ("/errors/payload-too-large", "Request body too large"),
    429: ("/errors/too-many-requests", "Too many requests"),
    500: ("/errors/server-error", "Internal Server Error"),
    503: ("/errors/service-unavailable", "Slow down"),
    507: ("/errors/insufficient-storage", "Insufficient Storage"),
}


class APIError(NsframeError):
    """An error answer of the REST service.

    Attributes mirror the error body: ``status``, ``code`` (the Lance error code),
    ``type``, ``title``, ``detail`` and ``instance``; ``response`` keeps the raw
    ``requests.Response`` on the client side (``None`` in the server). On the client,
    ``method`` and ``url`` name the request that failed, and ``message`` (what ``str()``
    shows) says what to do in the client's own names: the server's ``detail`` speaks of
    REST members, the message of Python arguments and methods. ``request_id`` is the
    request's ``x-request-id``, which the server's log lines of that request carry;
    ``str()`` ends with it.
    """

    status: ClassVar[int] = 500
    code: ClassVar[int] = 18
    # True for a class that answers with another class's code, which names that class.
    borrows_code: ClassVar[bool] = False

    def __init__(
        self,
        detail: str,
        *,
        instance: str | None = None,
        status: int | None = None,
        code: int | None = None,
        type: str | None = None,
        title: str | None = None,
        response: Any = None,
        headers: dict[str, str] | None = None,
        url: str | None = None,
        request_id: str | None = None,
        method: str | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(message or detail)
        self.detail = detail
        self.message = message or detail
        self.instance = instance
        # Instance attributes shadow the class defaults only when the server said otherwise.
        if status is not None:
            self.status = status  # type: ignore[misc]
        if code is not None:
            self.code = code  # type: ignore[misc]
        default_type, default_title = ERROR_TYPES.get(self.status, ERROR_TYPES[500])
        self.type = type or default_type
        self.title = title or default_title
        self.response = response
        self.headers = headers or {}
        # Client side only: the request that failed, for the repr and for debugging.
        self.method = method
        self.url = url
        self.request_id = request_id

    def _picklable_state(self) -> dict[str, Any]:
        state = super()._picklable_state()
        # The live response holds a connection and the session's hooks; what it said is
        # kept in the other attributes (status, headers, url, detail).
        state["response"] = None
        return state

    def __str__(self) -> str:
        # What to do comes first; the HTTP status and request are in the attributes and
        # the repr, for whoever debugs the service rather than the data. The request id
        # ends it: what the operator finds the server's log lines by.
        if self.request_id:
            return f"{self.message} (request id {self.request_id})"
        return self.message

    def __repr__(self) -> str:
        request = f", method={self.method!r}, url={self.url!r}" if self.url else ""
        return (f"{type(self).__name__}({self.message!r}, status={self.status}, "
                f"code={self.code}{request})")

    def reword(self, message: str) -> APIError:
        """This error with ``message`` as what it says (a call site knows the arguments
        the person used best); every other attribute stays. Returns the error itself."""
        self.message = message
        self.args = (message,)
        return self

    def to_body(self) -> dict[str, Any]:
        """The JSON error body of the contract, plus upstream's ``code`` and ``error``."""
        return {
            "type": self.type,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "instance": self.instance or "",
            "code": self.code,
            "error": self.detail,
        }


class InvalidInputError(APIError):
    """The request is malformed or asks for something impossible (400)."""

    status = 400
    code = 13


class SchemaMismatchError(InvalidInputError):
    """Inserted data does not match the table's schema (400)."""

    code = 20


class UnauthorizedError(APIError):
    """No valid credentials were sent (401)."""

    status = 401
    code = 16


class ForbiddenError(APIError):
    """The credentials are valid but may not do this (403)."""

    status = 403
    code = 15


class NotFoundError(APIError):
    """Something the request names does not exist (404)."""

    status = 404
    code = 4


class NamespaceNotFoundError(NotFoundError):
    """The namespace does not exist."""

    code = 1


class TableNotFoundError(NotFoundError):
    """The table does not exist."""

    code = 4


class IndexNotFoundError(NotFoundError):
    """The index does not exist."""

    code = 6


class TagNotFoundError(NotFoundError):
    """The tag does not exist."""

    code = 8


class TransactionNotFoundError(NotFoundError):
    """The transaction id is unknown."""

    code = 10


class VersionNotFoundError(NotFoundError):
    """The table version does not exist."""

    code = 11


class ColumnNotFoundError(NotFoundError):
    """A column or field path does not resolve."""

    code = 12


class BranchNotFoundError(NotFoundError):
    """The branch does not exist."""

    code = 22


class UnsupportedError(APIError):
    """The server does not support this operation (406)."""

    status = 406
    code = 0


class ConflictError(APIError):
    """The request conflicts with the current state (409)."""

    status = 409
    code = 14


class AlreadyExistsError(ConflictError):
    """The object to create exists already."""

    code = 5


class NamespaceAlreadyExistsError(AlreadyExistsError):
    """The namespace exists already."""

    code = 2


class TableAlreadyExistsError(AlreadyExistsError):
    """The table exists already."""

    code = 5


class IndexAlreadyExistsError(AlreadyExistsError):
    """The index exists already."""

    code = 7


class TagAlreadyExistsError(AlreadyExistsError):
    """The tag exists already."""

    code = 9


class BranchAlreadyExistsError(AlreadyExistsError):
    """The branch exists already."""

    code = 23


class NamespaceNotEmptyError(ConflictError):
    """The namespace still holds tables or namespaces."""

    code = 3


class ConcurrentModificationError(ConflictError):
    """Another writer changed the table at the same time; retry."""

    code = 14


class InvalidTableStateError(ConflictError):
    """The table is in a state that does not allow the operation."""

    code = 19


class PayloadTooLargeError(APIError):
    """The request body is larger than the server accepts (413)."""

    status = 413
    # Upstream has no code of its own for a body too large.
    code = InvalidInputError.code
    borrows_code = True


class TooManyRequestsError(APIError):
    """The server throttles this caller (429); retry later."""

    status = 429
    code = 21


class ServiceUnavailableError(APIError):
    """The server is overloaded (503); retry after ``Retry-After``."""

    status = 503
    code = 17


class ServerError(APIError):
    """The server failed unexpectedly (5xx)."""

    status = 500
    code = 18


class StorageFullError(ServerError):
    """The server's storage is full (507): nothing was written; the same request
    succeeds once the operator has freed space."""

    status = 507
    # Upstream has no code for a full store: Internal's, as the server's own condition.
    borrows_code = True


def _classes_by_code() -> dict[int, type[APIError]]:
    """Each Lance code and the class it names: of the classes with that code, the one all
    the others are base classes of (code 4 is TableNotFoundError, not NotFoundError)."""
    classes = [c for c in globals().values() if isinstance(c, type) and issubclass(c, APIError)]
    by_code: dict[int, type[APIError]] = {}
    for cls in classes:
        if cls.borrows_code:
            continue
        named = by_code.setdefault(cls.code, cls)
        if issubclass(cls, named):
            by_code[cls.code] = cls
        elif not issubclass(named, cls):
            raise TypeError(f"{cls.__name__} and {named.__name__} both claim code {cls.code}: "
                            "give one its own code, or set borrows_code on it.")
    return by_code


_BY_CODE = _classes_by_code()

_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidInputError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: UnsupportedError,
    406: UnsupportedError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: TooManyRequestsError,
    503: ServiceUnavailableError,
    507: StorageFullError,
}


def error_class_for(status: int, code: int | None) -> type[APIError]:
    """Pick the most specific class for an error answer: the code first, then the status.

    A code whose class disagrees with the HTTP status (a server that maps codes its own
    way) is ignored, so ``except NotFoundError`` always means a 404.
    """
    if code is not None and code in _BY_CODE:
        cls = _BY_CODE[code]
        if cls.status == status or (status == 400 and cls is NamespaceNotFoundError):
            return cls
        if status == 405 and cls is UnsupportedError:  # the router's 405 uses code 0
            return cls
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else APIError
