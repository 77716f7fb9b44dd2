"""Collecting what crashes leave behind, never anything committed.

A crash can leave: a namespace's entries and its tables' data after its drop was written
but before they were deleted; a data folder whose create never reached the catalog; a
table's data files written by an insert that never committed; records of writes in flight
by a server that is gone; the records of servers dead longer than their lease; the
markers of schema changes past their end; entries stuck "dropping". Each is told from
live data by the catalog (what is reachable from the root) and by the write records
(`leases`): data a live server may still be writing is never touched, and committed data
is always reachable, so it is never a candidate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import lance

from nsframe.server._storage import turns
from nsframe.server._storage.catalog import (
    CATALOG,
    LIVE_NAMESPACE,
    ROOT_UID,
    TABLES,
    Catalog,
    entry_key,
)
from nsframe.server._storage.leases import Write
from nsframe.server._storage.objects import Objects
from nsframe.server._storage.registry import kept_keys

log = logging.getLogger("nsframe.server")
# Data that no record explains is collected only once it is this old: a writer outside
# nsframe (pylance, Daft) may be writing it.
DEFAULT_GRACE_SECONDS = 3600.0
# How much later than its timestamp an object in an object store may have been written:
# stores give whole seconds (moto's S3 listings did, for the files Lance wrote).
CLOCK_GRAIN = 1.0


@dataclass
class Garbage:
    """What a collection found (and removed, unless it was a dry run)."""

    keys: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    bytes: int = 0

    def lines(self) -> list[str]:
        return [f"folder {f}" for f in self.folders] + [f"file {k}" for k in self.keys]


class Stopped(Exception):
    """The collection was asked to stop (its server is shutting down); nothing removed."""


def collect(catalog: Catalog, *, dry_run: bool = True,
            grace_seconds: float = DEFAULT_GRACE_SECONDS,
            stop: threading.Event | None = None) -> Garbage:
    """Find what no committed state references; remove it unless ``dry_run``.

    Times are the store's: a file older than ``started`` existed before this collection
    began, and a write's files are never older than its record. ``stop`` set meanwhile
    ends the search early with `Stopped`, before anything is removed.
    """

    def checkpoint() -> None:
        if stop is not None and stop.is_set():
            raise Stopped

    objects = catalog.objects
    started = catalog.leases.store_now()
    garbage = Garbage()
    now = time.time()
    servers = catalog.leases.servers()
    live: list[Write] = []
    crashed: dict[str, float] = {}
    for write in catalog.leases.writes():
        owner = servers.get(write.server)
        if write.server == catalog.leases.server_id or (owner and owner.alive(now)):
            live.append(write)
        else:
            garbage.keys.append(write.key)
            crashed[write.location] = min(write.started, crashed.get(write.location, now))
    # Records of servers dead longer than their lease (their writes are judged above).
    garbage.keys.extend(catalog.leases.expired_records(now, started))
    garbage.keys.extend(turns.expired_markers(objects, now))
    live_uids, live_tables = _reachable(catalog)
    # Files older than this cannot be a live write's. Nor can anything made after
    # ``started`` be garbage: a server answers while this runs (start-up's collection,
    # another replica's), and what it creates meanwhile is not in the listing above.
    settled = min([w.started for w in live] + [started])
    grain = _grain(objects)
    # Namespace incarnations nothing reaches: a drop wrote its mark, then stopped.
    for uid in objects.children(CATALOG):
        checkpoint()
        if uid not in live_uids and _before(_newest(objects, f"{CATALOG}{uid}/"), settled,
                                            grain):
            garbage.folders.append(f"{CATALOG}{uid}/")
    busy = {w.location for w in live}
    kept = kept_keys(catalog)  # deregistered tables' data
    for name in objects.children(TABLES):
        checkpoint()
        folder = f"{TABLES}{name}"
        if folder in live_tables or folder in busy or folder in kept:
            continue
        if _before(_newest(objects, folder + "/"), settled, grain):
            garbage.folders.append(folder + "/")
    for folder in live_tables:
        checkpoint()
        if not catalog.holds_dataset(folder):
            continue  # a declared table's reserved folder, not written yet
        cutoff = min([w.started for w in live if w.location == folder] + [started])
        garbage.keys.extend(_unreferenced(catalog, folder, crashed.get(folder), cutoff,
                                          started - grace_seconds))
    if objects.is_local:
        # A local write stages each file as "<name>#<n>" before its rename; an object
        # store writes whole objects, so only a local root can hold these.
        for obj in objects.walk(""):
            if "#" in obj.key.rsplit("/", 1)[-1] and obj.modified.timestamp() < settled:
                garbage.keys.append(obj.key)  # a write's staging file, left by a crash
    garbage.bytes = _size(catalog, garbage)
    checkpoint()
    if not dry_run:
        _remove(catalog, garbage)
        _recover_dropping(catalog)
    return garbage


def _grain(objects: Objects) -> float:
    """How much later than its stamp an object may have been written: an object store
    may give whole seconds (S3's Last-Modified); a local file's stamp is exact."""
    return 0.0 if objects.is_local else CLOCK_GRAIN


def _before(stamp: float, limit: float, grain: float) -> bool:
    """Whether an object stamped ``stamp`` was surely written before ``limit``."""
    return stamp + grain <= limit if grain else stamp < limit


def _newest(objects: Objects, folder: str) -> float:
    """The stamp of the newest object below ``folder``."""
    return max((o.modified.timestamp() for o in objects.walk(folder)), default=0.0)


def _reachable(catalog: Catalog) -> tuple[set[str], set[str]]:
    """Namespace uids and table data folders reachable from the root."""
    uids, entries = catalog.reachable()
    return uids, {key for entry in entries if (key := entry_key(entry)) is not None}


def _unreferenced(catalog: Catalog, folder: str, crashed_since: float | None,
                  cutoff: float, unexplained_before: float) -> Iterable[str]:
    """Data files of a live table that no version of any branch references, written by a
    crashed write (after ``crashed_since``) or older than ``unexplained_before``; never
    files written after ``cutoff`` (a live write may commit them)."""
    data = f"{folder}/data/"
    grain = _grain(catalog.objects)
    candidates = [o for o in catalog.objects.walk(data)
                  if _before(o.modified.timestamp(), cutoff, grain)
                  and ((crashed_since is not None
                        and o.modified.timestamp() + grain >= crashed_since)
                       or _before(o.modified.timestamp(), unexplained_before, grain))]
    if not candidates:
        return []
    referenced = _referenced_files(catalog.objects.uri(folder), catalog)
    return [o.key for o in candidates if o.key[len(data):] not in referenced]


def _referenced_files(uri: str, catalog: Catalog) -> set[str]:
    """Every data file name any version of any branch of the dataset at ``uri`` uses."""
    options = catalog.datasets.storage_options
    ds = lance.dataset(uri, storage_options=options)
    names: set[str] = set()
    refs: list[tuple[str | None, int]] = [(None, v["version"]) for v in ds.versions()]
    for name in ds.branches.list():
        tip = ds.checkout_version((name, None))
        refs.extend((name, v["version"]) for v in tip.versions())
    for branch, version in refs:
        at = ds.checkout_version((branch, version) if branch else version)
        for fragment in at.get_fragments():
            names.update(f.path.rsplit("/", 1)[-1] for f in fragment.data_files())
    return names


def _size(catalog: Catalog, garbage: Garbage) -> int:
    total = 0
    for folder in garbage.folders:
        total += sum(o.size for o in catalog.objects.walk(folder))
    return total


def _remove(catalog: Catalog, garbage: Garbage) -> None:
    for folder in garbage.folders:
        catalog.objects.delete_folder(folder)
    catalog.objects.delete(garbage.keys)
    if garbage.folders or garbage.keys:
        log.info("collected %d folder(s) and %d file(s), %d bytes", len(garbage.folders),
                 len(garbage.keys), garbage.bytes)


def _recover_dropping(catalog: Catalog) -> None:
    """Namespaces whose drop stopped between its mark and its end are active again."""
    pending = [ROOT_UID]
    while pending:
        uid = pending.pop()
        for entry in catalog.entries.latest_below(f"{CATALOG}{uid}/ns/").values():
            if entry.state not in LIVE_NAMESPACE:
                continue
            pending.append(entry.uid)
            if entry.state == "dropping" and not catalog.being_dropped(entry):
                body = catalog.entries.body(entry)
                catalog.entries.advance(entry.folder, entry, "active", entry.uid,
                                        {"properties": body.get("properties") or {}})
