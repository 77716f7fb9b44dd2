"""Catalog entries as generation logs: conditional writes from create-if-absent alone.

An entry (a namespace or a table) is a folder of small JSON files, one per generation::

    <folder>/00000000000000000003.json    {"state": "created", "uid": "orders-5f0c...", ...}

The newest generation is the entry's state. To change it, a writer reads generation
``n`` and creates generation ``n + 1`` if absent: of two writers that read the same
``n``, exactly one creates it, and the other learns it lost (replace-if-unchanged).
Creating generation 1 is create-if-absent. This is Lance's own commit protocol for
manifests, so it holds on every store Lance supports, and a reader always sees a
complete generation (each is written whole). The file name is the generation alone,
which is what makes two writers collide; the state and the uid (a namespace's
incarnation, a table's data folder) are in the body.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nsframe.server._storage.freshness import Freshness, Recent
from nsframe.server._storage.metrics import (
    BELOW_CACHE,
    CATALOG_CONFLICT,
    ENTRY_CACHE,
    LATEST_CACHE,
)
from nsframe.server._storage.objects import Objects

GEN_WIDTH = 20
# Generations kept behind the newest: enough for a reader that listed just before a
# write to still read the file it saw.
KEEP_BEHIND = 2
# Generation files read, kept by key: a generation is written once and never changes,
# so a strong read needs only the LIST that names the newest one.
READ_CACHE_SIZE = 8192


@dataclass(frozen=True)
class Entry:
    """One generation of one entry."""

    folder: str
    gen: int
    state: str
    uid: str
    body: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return gen_key(self.folder, self.gen)


def gen_key(folder: str, gen: int) -> str:
    return f"{folder}{gen:0{GEN_WIDTH}d}.json"


def parse_gen(name: str) -> int | None:
    stem, dot, ext = name.partition(".")
    return int(stem) if dot and ext == "json" and stem.isdigit() else None


class Entries:
    """Read and advance generation logs in an object store."""

    def __init__(self, objects: Objects, freshness: Freshness | None = None) -> None:
        self.objects = objects
        self.freshness = freshness or Freshness()
        self._read_cache: OrderedDict[str, Entry] = OrderedDict()
        self._read_lock = threading.Lock()
        # What reads within the read consistency interval may reuse (unused when strong).
        self._latest: Recent[str, Entry | None] = Recent()
        self._below: Recent[str, dict[str, Entry]] = Recent(256)

    def latest(self, folder: str) -> Entry | None:
        """The newest generation in ``folder`` (which ends with a slash)."""
        hit, entry = self._latest.get(folder, self.freshness)
        if not self.freshness.strong:  # strong reads keep nothing: no cache to count
            (LATEST_CACHE.hit if hit else LATEST_CACHE.miss).inc()
        if hit:
            return entry
        gens = [g for name in self.objects.file_names(folder)
                if (g := parse_gen(name)) is not None]
        entry = self._read(folder, max(gens)) if gens else None
        if not self.freshness.strong:
            self._latest.put(folder, entry)
        return entry

    def latest_below(self, folder: str, *, fresh: bool = False) -> dict[str, Entry]:
        """The newest generation of every entry folder directly below ``folder``;
        ``fresh``: as stored now, whatever the read consistency interval allows."""
        hit, below = (False, None) if fresh else self._below.get(folder, self.freshness)
        if not self.freshness.strong and not fresh:
            (BELOW_CACHE.hit if hit and below is not None else BELOW_CACHE.miss).inc()
        if hit and below is not None:
            return dict(below)
        below = self._scan_below(folder)
        if not self.freshness.strong:
            self._below.put(folder, below)
        return dict(below)

    def _scan_below(self, folder: str) -> dict[str, Entry]:
        newest: dict[str, int] = {}
        for obj in self.objects.walk(folder):
            name, _, rest = obj.key[len(folder):].partition("/")
            gen = parse_gen(rest)
            if gen is not None and gen > newest.get(name, 0):
                newest[name] = gen
        found = {name: self._read(f"{folder}{name}/", gen) for name, gen in newest.items()}
        return {name: entry for name, entry in found.items() if entry is not None}

    def _read(self, folder: str, gen: int) -> Entry | None:
        key = gen_key(folder, gen)
        with self._read_lock:
            cached = self._read_cache.get(key)
        if cached is not None:
            ENTRY_CACHE.hit.inc()
            return cached
        ENTRY_CACHE.miss.inc()
        raw = self.objects.get(key)
        if raw is None:  # only older generations are pruned: the newest stays
            return None
        body: dict[str, Any] = json.loads(raw)
        entry = Entry(folder, gen, str(body.get("state")), str(body.get("uid")), body)
        self._keep(entry)
        return entry

    def _keep(self, entry: Entry) -> None:
        with self._read_lock:
            self._read_cache[entry.key] = entry
            while len(self._read_cache) > READ_CACHE_SIZE:
                self._read_cache.popitem(last=False)

    @staticmethod
    def body(entry: Entry) -> dict[str, Any]:
        """What the generation says: state, uid, properties, when it was written."""
        return entry.body or {}

    def advance(self, folder: str, after: Entry | None, state: str, uid: str,
                body: dict[str, Any]) -> Entry | None:
        """Write the generation after ``after`` (the first if None); None if another
        writer wrote it first."""
        entry = Entry(folder, (after.gen if after else 0) + 1, state, uid,
                      {**body, "state": state, "uid": uid, "at": time.time()})
        # Whatever this replica remembers near ``folder`` is about to be out of date.
        self._latest.discard(folder)
        self._below.clear()
        if not self.objects.put_if_absent(entry.key, json.dumps(entry.body).encode()):
            CATALOG_CONFLICT.inc()
            return None
        newest = self._newest_gen(folder)
        if newest > entry.gen:
            # Our generation had been written and pruned before: we read a stale state.
            CATALOG_CONFLICT.inc()
            self.objects.delete([entry.key])
            return None
        self._keep(entry)
        if not self.freshness.strong:
            self._latest.put(folder, entry)
        self._prune(folder, entry)
        return entry

    def _newest_gen(self, folder: str) -> int:
        return max((g for o in self.objects.walk(folder)
                    if (g := parse_gen(o.key[len(folder):])) is not None), default=0)

    def _prune(self, folder: str, newest: Entry) -> None:
        old = [o.key for o in self.objects.walk(folder)
               if (gen := parse_gen(o.key[len(folder):])) is not None
               and gen < newest.gen - KEEP_BEHIND]
        self.objects.delete(old)
