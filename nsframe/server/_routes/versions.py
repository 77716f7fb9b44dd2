"""Table versions: list, describe, restore; and transaction lookup.

A version belongs to a branch: the main branch's versions are numbered from 1, and a
branch's line starts at the version it was created from (see `docs/versions.md`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lance.dataset import LanceDataset

from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe.exceptions import VersionNotFoundError
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import paginate
from nsframe.server._http.transactions import TransactionLog
from nsframe.server._models.versions import (
    DescribeVersionRequest,
    ListVersionsRequest,
    RestoreRequest,
)
from nsframe.server._storage.catalog import Manifest
from nsframe.server._storage.errors import lance_errors

log = logging.getLogger("nsframe.server")

U64_MAX = 2**64 - 1
# Version numbers become fixed-width keys, so that `paginate`'s string order is numeric.
KEY_WIDTH = 20


# ------------------------------------------------------------------ version entries
def operation_of(ds: LanceDataset, version: int) -> dict[str, str]:
    """What ``version`` did, from its transaction file, where Lance kept one."""
    try:
        txn = ds.read_transaction(version)
    except Exception:  # an unreadable transaction only loses the annotation
        log.debug("no transaction for version %s", version, exc_info=True)
        return {}
    if txn is None:
        return {}
    op = txn.operation
    found = {"operation": type(op).__name__, "read_version": str(txn.read_version)}
    predicate = getattr(op, "predicate", None)
    if isinstance(predicate, str):
        found["predicate"] = predicate
    restored = getattr(op, "version", None)
    if type(op).__name__ == "Restore" and isinstance(restored, int):
        found["restored_version"] = str(restored)
    return found


def version_entry(
    manifests: Mapping[int, Manifest], branch: str | None, ds: LanceDataset,
    info: Mapping[str, Any],
) -> dict[str, Any]:
    """One `TableVersion` of the upstream spec, with what the version did in metadata."""
    number = int(info["version"])
    stamp = info["timestamp"]
    millis = int(stamp.timestamp() * 1000) if isinstance(stamp, datetime) else int(stamp) // 10**6
    metadata = {str(k): str(v) for k, v in (info.get("metadata") or {}).items()}
    metadata.update(operation_of(ds, number))
    entry: dict[str, Any] = {"version": number, "timestamp_millis": millis}
    manifest = manifests.get(number)
    if manifest is not None:
        entry["manifest_path"] = manifest.path
        entry["manifest_size"] = manifest.size
    entry["branch"] = normalize_branch(branch) or MAIN_BRANCH
    entry["metadata"] = metadata
    return entry


def _version_key(version: int, descending: bool) -> str:
    return f"{(U64_MAX - version) if descending else version:0{KEY_WIDTH}d}"


def _key_version(key: str, descending: bool) -> int:
    return U64_MAX - int(key) if descending else int(key)


def read_version(walker: LanceDataset, number: int
                 ) -> tuple[LanceDataset, Mapping[str, Any]] | None:
    """``walker`` at version ``number`` and what `get_version` says of it; None for a
    version cleaned up since it was listed. The one manifest read per listed version."""
    try:
        at = walker.checkout_version(number)
        return at, at.get_version()
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------- handlers
def list_versions(call: Call[ListVersionsRequest]) -> dict[str, Any]:
    args = call.args
    branch, descending = args.branch, bool(args.descending)
    ref = call.catalog.require_table(call.id)
    # Caches of its own: the page's manifests are read and dropped, so a listing's memory
    # follows the page, not the history (the shared cache kept every manifest listed).
    walker = call.catalog.walker(ref, branch)
    # Version numbers come cheaply from the manifest names; only the page's manifests are read.
    with lance_errors(f"Listing the versions of {call.label!r} failed"):
        numbers = [int(item["version"]) for item in walker.version_refs()]
    page, next_token = paginate([_version_key(v, descending) for v in numbers],
                                args.page_token, args.limit,
                                listing="versions-desc" if descending else "versions")
    entries = []
    manifests = call.catalog.manifests(ref, branch)
    for key in page:
        found = read_version(walker, _key_version(key, descending))
        if found is not None:
            entries.append(version_entry(manifests, branch, *found))
    return {"versions": entries, "page_token": next_token}


def describe_version(call: Call[DescribeVersionRequest]) -> dict[str, Any]:
    branch, version = call.args.branch, call.args.version
    ref = call.catalog.require_table(call.id)
    ds = call.catalog.dataset(ref, branch=branch, version=version)
    with lance_errors(f"Describing version {ds.version} of {call.label!r} failed"):
        info = ds.get_version()
    return {"version": version_entry(call.catalog.manifests(ref, branch), branch, ds, info)}


def _missing_version(call: Call[RestoreRequest], version: int,
                     branch: str | None) -> VersionNotFoundError:
    where = f" on branch {branch!r}" if normalize_branch(branch) else ""
    return VersionNotFoundError(
        f"Table {call.label!r} has no version {version}{where}: list versions to see which "
        "exist (the first is 1)."
    )


def restore(call: Call[RestoreRequest]) -> dict[str, Any]:
    version, branch = call.args.version, call.args.branch
    catalog = call.catalog
    ref = catalog.require_table(call.id)
    # A dataset object of our own: restoring moves it, and cached ones are shared.
    target = catalog.dataset(ref, branch=branch)
    try:
        target = target.checkout_version(version)
    except (OSError, ValueError) as exc:
        raise _missing_version(call, version, branch) from exc
    with TransactionLog.of(call.request).track(
        "Restore", table=call.label, branch=normalize_branch(branch) or MAIN_BRANCH,
        restore_version=version,
    ) as txn:
        with lance_errors(f"Restoring {call.label!r} to version {version} failed"):
            target.restore()  # type: ignore[no-untyped-call]
        txn.note(version=target.version)
    catalog.remember(ref, branch, target)
    return {"transaction_id": txn.id, "version": target.version}
