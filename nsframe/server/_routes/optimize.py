"""`POST /v1/table/{id}/optimize`: compact small fragments and bring indexes up to date.

Not in the contract: an nsframe extension, named after LanceDB's `Table.optimize()`.
Many small inserts leave many small fragments, and queries slow down with their number
(PERFORMANCE_NOTES.md: an IVF query at 1M rows takes twice as long on 341 fragments as on
one); rows appended after an index was built are searched without it until the index is
optimized. Compaction rewrites data files into a new version; older versions stay
readable, so time travel and tags are unaffected.
"""

from __future__ import annotations

from typing import Any

from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe.server._http.handler import Call
from nsframe.server._http.transactions import TransactionLog
from nsframe.server._models.tables import OptimizeRequest
from nsframe.server._storage.errors import lance_errors
from nsframe.server._storage.writes import DEFAULT_TARGET_ROWS


def optimize(call: Call[OptimizeRequest]) -> dict[str, Any]:
    branch = call.args.branch
    target_rows = call.args.target_rows_per_fragment or DEFAULT_TARGET_ROWS
    with_indices = call.args.optimize_indices
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    # Compaction mutates the dataset object: use one of our own, not the readers' copy.
    ds = catalog.dataset(ref, branch=branch)
    before = ds.version
    with TransactionLog.of(call.request).track(
        "Optimize", table=call.label, branch=normalize_branch(branch) or MAIN_BRANCH,
    ) as txn:
        with lance_errors(f"Optimizing table {call.label!r} failed"):
            metrics = ds.optimize.compact_files(target_rows_per_fragment=target_rows)
            if with_indices is not False and ds.describe_indices():
                ds.optimize.optimize_indices()
        txn.note(version=ds.version)
    catalog.remember(ref, branch, ds)
    return {
        "transaction_id": txn.id,
        "version": ds.version,
        "previous_version": before,
        "fragments_removed": metrics.fragments_removed,
        "fragments_added": metrics.fragments_added,
        "files_removed": metrics.files_removed,
        "files_added": metrics.files_added,
    }
