"""A registry of long-running operations (restore, index builds) and their status.

Operations run to completion inside their request today, so a transaction is recorded
as Succeeded or Failed when the response is sent; the registry is what
`POST /v1/transaction/{id}/describe` reads. It is kept in memory, bounded.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("Queued", "Running", "Succeeded", "Failed", "Canceled")
MAX_KEPT = 10_000


@dataclass
class Transaction:
    id: str
    operation: str
    status: str = "Queued"
    properties: dict[str, str] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "properties": dict(self.properties)}


class TransactionLog:
    def __init__(self) -> None:
        self._items: OrderedDict[str, Transaction] = OrderedDict()
        self._lock = threading.Lock()

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
