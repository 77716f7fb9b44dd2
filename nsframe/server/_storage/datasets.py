"""Opened Lance datasets, kept between requests but never shared by two of them.

Opening a dataset and its indexes costs milliseconds, so the newest opened state of each
(table incarnation, branch) is kept, with one `lance.Session` for index and metadata
caches. A request never uses that kept object: it gets its own by `checkout_version`
(about a microsecond, no I/O), so a request that mutates its dataset (a tag, a delete)
cannot disturb another reading the same table. Keys are a table incarnation's location,
which no other incarnation ever has.

Within the read consistency interval (`freshness`), a read reuses the kept state
without asking the store for the latest version (a LIST of ``_versions/``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import lance
import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe.exceptions import BranchNotFoundError, TableNotFoundError, VersionNotFoundError
from nsframe.server._storage.freshness import Freshness
from nsframe.server._storage.metrics import DATASET_CACHE

CACHE_SIZE = 128
SCHEMA_CACHE_SIZE = 1024
# The caches of a `walker`: a version's manifest is read once and never kept (the
# shared session kept every listed one, up to its 1 GiB).
WALK_CACHE_BYTES = 1 << 20


class DatasetCache:
    def __init__(self, storage_options: dict[str, str] | None = None,
                 size: int = CACHE_SIZE, freshness: Freshness | None = None) -> None:
        self.session = lance.Session()  # type: ignore[attr-defined]
        self.storage_options = storage_options or None
        self.freshness = freshness or Freshness()
        self._kept: OrderedDict[tuple[str, str | None], LanceDataset] = OrderedDict()
        # When each kept state was last known to be the latest (time.monotonic).
        self._checked: dict[tuple[str, str | None], float] = {}
        self._size = size
        self._lock = threading.Lock()
        # The schema of each version read lately: a version never changes, and pylance
        # builds a schema anew on each access (tens of µs in a request's cold cache).
        self._schemas: OrderedDict[tuple[str, str | None, int], pa.Schema] = OrderedDict()

    def get(self, uri: str, label: str, branch: str | None,
            version: int | None) -> LanceDataset:
        """A dataset object of the caller's own at the latest version of ``branch`` (or
        at ``version`` of it)."""
        with self._lock:
            kept = self._kept.get((uri, branch))
            checked = self._checked.get((uri, branch), 0.0)
        if kept is None:
            DATASET_CACHE.miss.inc()
            kept = self._open(uri, label, branch)
            self.remember(uri, branch, kept)
        elif not self.freshness.reusable(checked):
            DATASET_CACHE.stale.inc()
            try:
                latest = kept.latest_version
                if latest != kept.version:
                    kept = kept.checkout_version(latest)
            except (OSError, ValueError) as exc:
                self.forget(uri)
                # Its folder is gone: the table was dropped since the catalog named it.
                raise TableNotFoundError(f"Table {label!r} does not exist.") from exc
            self.remember(uri, branch, kept)
        else:  # resolved recently enough for this read, without listing the versions
            DATASET_CACHE.hit.inc()
        wanted = kept.version if version is None else version
        try:
            return kept.checkout_version(wanted)
        except (OSError, ValueError) as exc:
            where = f" on branch {branch!r}" if branch else ""
            raise VersionNotFoundError(
                f"Table {label!r} has no version {version}{where}: list versions to see "
                "which exist."
            ) from exc

    def walker(self, uri: str, label: str, branch: str | None) -> LanceDataset:
        """A dataset object at the latest version of ``branch`` with small caches of its
        own, freed with it: for reading many versions once each (a page of the version
        listing) without filling the shared session with their manifests."""
        session = lance.Session(  # type: ignore[attr-defined]
            index_cache_size_bytes=WALK_CACHE_BYTES, metadata_cache_size_bytes=WALK_CACHE_BYTES)
        return self._open(uri, label, branch, session)

    def _open(self, uri: str, label: str, branch: str | None,
              session: lance.Session | None = None) -> LanceDataset:  # type: ignore[name-defined]
        try:
            ds = lance.dataset(uri, session=session or self.session,
                               storage_options=self.storage_options)
        except (OSError, ValueError) as exc:
            # The table was dropped between the catalog lookup and this open.
            raise TableNotFoundError(f"Table {label!r} does not exist.") from exc
        if branch is None:
            return ds
        if branch not in ds.branches.list():
            raise BranchNotFoundError(f"Table {label!r} has no branch {branch!r}: create it first.")
        return ds.checkout_version((branch, None))

    def schema(self, uri: str, branch: str | None, ds: LanceDataset) -> pa.Schema:
        """``ds.schema``, for ``ds`` at a version of ``uri`` on ``branch``."""
        key = (uri, branch, ds.version)
        with self._lock:
            schema = self._schemas.get(key)
        if schema is None:
            schema = ds.schema
            with self._lock:
                self._schemas[key] = schema
                while len(self._schemas) > SCHEMA_CACHE_SIZE:
                    self._schemas.popitem(last=False)
        return schema

    def remember(self, uri: str, branch: str | None, ds: LanceDataset) -> None:
        """Keep ``ds`` as the newest known state of ``uri`` on ``branch``."""
        key = (uri, branch)
        with self._lock:
            current = self._kept.get(key)
            if current is not None and current.version > ds.version:
                return
            self._kept[key] = ds
            self._checked[key] = time.monotonic()
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                old, _ = self._kept.popitem(last=False)
                self._checked.pop(old, None)

    def forget(self, uri: str) -> None:
        with self._lock:
            for key in [k for k in self._kept if k[0] == uri]:
                del self._kept[key]
                self._checked.pop(key, None)
