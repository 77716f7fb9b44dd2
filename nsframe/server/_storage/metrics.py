"""What the storage layer counts for the server's ``/metrics`` (docs/operations.md, Metrics).

Process-wide Prometheus counters, as the client library keeps them: under ``nsframe
serve`` each worker writes its own to the supervisor's ``PROMETHEUS_MULTIPROC_DIR`` and a
scrape adds them up (`nsframe.server._workers`). Every label value is one of a fixed set
named here, so the number of series stays bounded whatever the traffic.

Only the requests nsframe itself sends are counted (the catalog, leases, merge turns,
garbage collection); the reads and writes Lance makes for a table's data go through its
own object store client, which exposes no counts.
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import Counter

StoreKind = Literal["get", "put", "create", "list", "delete", "claim"]
STORE_KINDS: tuple[StoreKind, ...] = ("get", "put", "create", "list", "delete", "claim")

STORE_REQUESTS = Counter(
    "nsframe_store_requests",
    "Requests nsframe sent to a root's object store (not Lance's own reads and writes of "
    "table data), by store and kind: get, put, create (create-if-absent), list (one per "
    "page), delete (one per bulk request), claim (a DynamoDB request of an s3+ddb root).",
    ["store", "kind"],
)
COMMIT_CONFLICTS = Counter(
    "nsframe_commit_conflicts",
    "Commits that lost to another writer: 'table' a Lance commit of table data (409 unless "
    "retried), 'catalog' a conditional write of the catalog (retried or answered).",
    ["where"],
)
COMMIT_RETRIES = Counter(
    "nsframe_commit_retries",
    "Attempts nsframe made again after losing to another writer: 'change_schema' a column "
    "change on a newer version, 'merge_turn' a merge waiting for its table's turn.",
    ["operation"],
)
CACHE_LOOKUPS = Counter(
    "nsframe_catalog_cache_lookups",
    "Lookups in the catalog's caches, by cache and result (hit, miss; 'stale' a kept "
    "dataset checked for a newer version before use).",
    ["cache", "result"],
)

# Bound once: ``labels()`` takes a lock and builds a key on every call.
TABLE_CONFLICT = COMMIT_CONFLICTS.labels("table")
CATALOG_CONFLICT = COMMIT_CONFLICTS.labels("catalog")
CHANGE_SCHEMA_RETRY = COMMIT_RETRIES.labels("change_schema")
MERGE_TURN_RETRY = COMMIT_RETRIES.labels("merge_turn")


class CacheCounts:
    """The hit and miss counters of one cache (and stale, for the one that has it)."""

    def __init__(self, cache: str, *, stale: bool = False) -> None:
        self.hit = CACHE_LOOKUPS.labels(cache, "hit")
        self.miss = CACHE_LOOKUPS.labels(cache, "miss")
        self.stale = CACHE_LOOKUPS.labels(cache, "stale") if stale else self.miss


# The generation bodies of catalog entries; the newest generation of a folder and the
# entries below a folder (both kept only within a read consistency interval); the kept
# dataset objects of tables.
ENTRY_CACHE = CacheCounts("entry")
LATEST_CACHE = CacheCounts("latest")
BELOW_CACHE = CacheCounts("below")
DATASET_CACHE = CacheCounts("dataset", stale=True)


def store_counters(store: str) -> dict[StoreKind, Counter]:
    """The request counters of one store (``s3``, ``file``, ...), bound by kind."""
    return {kind: STORE_REQUESTS.labels(store, kind) for kind in STORE_KINDS}
