"""`POST /v1/transaction/{id}/describe`: the status of a long-running operation."""

from __future__ import annotations

from typing import Any

from nsframe.exceptions import TransactionNotFoundError
from nsframe.server._http.handler import Call
from nsframe.server._http.transactions import TransactionLog


def describe_transaction(call: Call) -> dict[str, Any]:
    txn_id = call.delimiter.join(call.id)
    txn = TransactionLog.of(call.request).get(txn_id)
    if txn is None:
        raise TransactionNotFoundError(
            f"Transaction {txn_id!r} is not known to this server: use the transaction_id "
            "of a recent response (the server keeps the most recent ones, in memory)."
        )
    return txn.to_json()
