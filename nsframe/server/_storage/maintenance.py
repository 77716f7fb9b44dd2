"""Maintenance entry points over a whole root: what `nsframe gc` and start-up run."""

from __future__ import annotations

import os

from nsframe.server._storage import gc
from nsframe.server._storage.catalog import Catalog


def collect_garbage(root: str | os.PathLike[str], *, apply: bool = False,
                    grace_seconds: float = gc.DEFAULT_GRACE_SECONDS,
                    storage_options: dict[str, str] | None = None) -> gc.Garbage:
    """What crashes left under ``root`` (removed when ``apply``); see `gc.collect`."""
    catalog = Catalog(root, storage_options=storage_options)
    try:
        return gc.collect(catalog, dry_run=not apply, grace_seconds=grace_seconds)
    finally:
        catalog.close()
