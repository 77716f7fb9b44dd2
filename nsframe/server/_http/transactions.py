"""A registry of long-running operations (restore, index builds) and their status.

Operations run to completion inside their request today, so a transaction is recorded
as Succeeded or Failed when the response is sent; the registry is what
`POST /v1/transaction/{id}/describe` reads. It is kept in memory, bounded.

An operation that fails after its transaction started answers with the contract's
error body, which has no member for it, so the id travels in the `x-transaction-id`
header; describing it gives status Failed and the error in its properties.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from nsframe.exceptions import APIError
from nsframe.server._storage.errors import UNEXPECTED, unexpected

STATUSES = ("Queued", "Running", "Succeeded", "Failed", "Canceled")
MAX_KEPT = 10_000
# Carries the transaction id of a failed operation, whose error body has no member for it.
TRANSACTION_HEADER = "x-transaction-id"


@dataclass
class Transaction:
    id: str
    operation: str
    status: str = "Queued"
    properties: dict[str, str] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def note(self, **properties: Any) -> None:
        """Add what the operation produced (its new version, say) to the record."""
        self.properties.update({k: str(v) for k, v in properties.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "properties": dict(self.properties)}


class TransactionLog:
    def __init__(self) -> None:
        self._items: OrderedDict[str, Transaction] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def of(request: Request) -> TransactionLog:
        """The log of the app serving ``request``."""
        log: TransactionLog = request.app.state.transactions
        return log

    @contextmanager
    def track(self, operation: str, **properties: Any) -> Iterator[Transaction]:
        """Record ``operation`` for the ``with`` block: Succeeded if the block returns,
        Failed if it raises.

        A failure records what the client was told (``error``, ``error_status``,
        ``error_code``) and adds the transaction id to the error's headers. An exception
        other than an `APIError` (Lance's are translated inside `lance_errors`, so this
        is our own bug) becomes the 500 the app would have answered, with the id too.
        """
        txn = self.start(operation, **properties)
        try:
            yield txn
        except Exception as exc:
            error = exc if isinstance(exc, APIError) else unexpected(
                exc, f"in transaction {txn.id} ({txn.operation})")
            # The detail is the one sent to the client: already free of paths and secrets.
            self.finish(txn, ok=False, error=error.detail, error_status=error.status,
                        error_code=error.code)
            error.headers = {**error.headers, TRANSACTION_HEADER: txn.id}
            if error is exc:
                raise
            raise error from exc
        except BaseException:
            self.finish(txn, ok=False, error=UNEXPECTED)
            raise
        self.finish(txn, ok=True)

    def start(self, operation: str, **properties: Any) -> Transaction:
        txn = Transaction(
            uuid.uuid4().hex, operation, "Running",
            {k: str(v) for k, v in properties.items() if v is not None} | {"operation": operation},
        )
        with self._lock:
            self._items[txn.id] = txn
            while len(self._items) > MAX_KEPT:
                self._items.popitem(last=False)
        return txn

    def finish(self, txn: Transaction, *, ok: bool, **properties: Any) -> None:
        with self._lock:
            txn.status = "Succeeded" if ok else "Failed"
            txn.properties.update({k: str(v) for k, v in properties.items() if v is not None})

    def get(self, txn_id: str) -> Transaction | None:
        with self._lock:
            return self._items.get(txn_id)
