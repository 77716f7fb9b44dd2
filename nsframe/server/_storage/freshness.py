"""How fresh a read must be: strong by default, or within ``--read-consistency-interval``.

Strong (interval 0): every request resolves the catalog entries it names (one LIST each)
and the table's latest version (one LIST of ``_versions/``), so it sees every commit
acknowledged before it started, whichever replica acknowledged it. With an interval of
*s* seconds a read may instead reuse what this replica resolved less than *s* seconds
ago, as LanceDB's ``read_consistency_interval`` does: fewer listings, and a read may
miss what other replicas committed in the last *s* seconds. Writes never reuse anything:
each resolves afresh and commits through the conditional protocols, so the interval
weakens no guarantee of a write. A replica's own writes update what it remembers, so
it reads them at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

# True while a write request runs (set by the app for routes that write).
_writing: ContextVar[bool] = ContextVar("nsframe_writing", default=False)


@contextmanager
def writing() -> Iterator[None]:
    """Everything resolved inside the block is resolved afresh."""
    token = _writing.set(True)
    try:
        yield
    finally:
        _writing.reset(token)


def mark_writing() -> None:
    """The rest of this request (its context) is a write: resolve everything afresh."""
    _writing.set(True)


class Freshness:
    """The read consistency interval of one catalog."""

    def __init__(self, interval: float = 0.0) -> None:
        if interval < 0:
            raise ValueError("The read consistency interval is a number of seconds >= 0")
        self.interval = float(interval)

    @property
    def strong(self) -> bool:
        return self.interval == 0.0

    def reusable(self, resolved_at: float) -> bool:
        """May this request use a state resolved at ``resolved_at`` (`time.monotonic`)?"""
        return (self.interval > 0.0 and not _writing.get()
                and time.monotonic() - resolved_at < self.interval)


class Recent(Generic[K, V]):
    """What was resolved lately, with when; bounded, oldest dropped first."""

    def __init__(self, size: int = 4096) -> None:
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: K, freshness: Freshness) -> tuple[bool, V | None]:
        """``(True, value)`` when ``key`` was resolved recently enough for this request."""
        with self._lock:
            found = self._items.get(key)
        if found is None or not freshness.reusable(found[0]):
            return False, None
        return True, found[1]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def discard(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
