"""Schema changes take their turn against a steady stream of inserts.

Lance commits add, alter and drop columns as operations that conflict with every append
committed while they ran, so a schema change that retried alone would lose to a steady
stream of inserts for ever. While one is pending on a table, inserts into that table
wait (at most `HOLD_SECONDS`): on this server through a gate in memory, on every other
server through a marker under ``_nsframe/schema/``, which their inserts look for at most
every `LOOK_SECONDS`. The schema change retries on the table's latest version until the
inserts already in flight have committed (`changes.change_schema`).
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from nsframe.server._storage.objects import Objects

MARKERS = "_nsframe/schema/"
# How long a schema change may keep retrying, and so how long its marker holds inserts.
CHANGE_SECONDS = 30.0
# The longest an insert waits for pending schema changes before it goes ahead anyway.
HOLD_SECONDS = CHANGE_SECONDS
# How stale this server's view of other servers' markers may be (one listing per table
# and interval, not one per insert).
LOOK_SECONDS = 0.5
_POLL_SECONDS = 0.05


def _folder(key: str) -> str:
    return f"{MARKERS}{hashlib.sha256(key.encode()).hexdigest()[:32]}/"


class Turns:
    """Pending schema changes and inserts in flight, per table data folder (``key``)."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self._cond = threading.Condition()
        self._pending: dict[str, int] = {}  # schema changes on this server
        self._inserting: dict[str, int] = {}  # inserts in flight on this server
        self._seen: dict[str, tuple[float, float]] = {}  # key -> (looked at, held until)

    @contextmanager
    def schema_change(self, key: str) -> Iterator[None]:
        """Hold inserts into ``key`` back, here and on other servers, for the block."""
        until = time.time() + CHANGE_SECONDS
        marker = f"{_folder(key)}{int(until * 1000)}-{uuid.uuid4().hex}"
        with self._cond:
            self._pending[key] = self._pending.get(key, 0) + 1
        try:
            self.objects.put(marker, b"")
            try:
                self._drain(key, time.monotonic() + CHANGE_SECONDS / 2)
                yield
            finally:
                self.objects.delete([marker])
        finally:
            self._release(self._pending, key)

    def _release(self, counts: dict[str, int], key: str) -> None:
        """One fewer of ``key`` in ``counts`` (a count of none leaves no entry)."""
        with self._cond:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
            self._cond.notify_all()

    def _drain(self, key: str, deadline: float) -> None:
        """Wait (bounded) for this server's inserts into ``key`` already under way."""
        with self._cond:
            while self._inserting.get(key) and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())

    @contextmanager
    def insert(self, key: str) -> Iterator[None]:
        """Wait while a schema change of ``key`` is pending (at most `HOLD_SECONDS`),
        then count the block as an insert in flight."""
        deadline = time.monotonic() + HOLD_SECONDS
        while self._held_elsewhere(key) and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
        with self._cond:  # checked and counted at once: `_drain` sees every insert it lets by
            while self._pending.get(key) and time.monotonic() < deadline:
                self._cond.wait(min(deadline - time.monotonic(), 1.0))
            self._inserting[key] = self._inserting.get(key, 0) + 1
        try:
            yield
        finally:
            self._release(self._inserting, key)

    def _held_elsewhere(self, key: str) -> bool:
        """True while another server's schema change of ``key`` is pending (as of at
        most `LOOK_SECONDS` ago; looked at afresh while one is)."""
        now = time.time()
        looked, until = self._seen.get(key, (0.0, 0.0))
        if now < until or now - looked >= LOOK_SECONDS:
            until = max((_until(o.key) for o in self.objects.walk(_folder(key))), default=0.0)
            self._seen[key] = (now, until)
        return now < until


def expired_markers(objects: Objects, now: float) -> list[str]:
    """Markers past their end (a crashed schema change's): they hold nothing any more."""
    return [o.key for o in objects.walk(MARKERS) if _until(o.key) < now]


def _until(marker: str) -> float:
    """A marker's end, from its name (``<until ms>-<uuid>``): past it, a crashed change's
    marker holds nothing."""
    try:
        return int(marker.rsplit("/", 1)[-1].split("-", 1)[0]) / 1000
    except ValueError:
        return 0.0
