"""Maintenance entry points over a whole root: what `nsframe gc` and start-up run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nsframe.server._storage import gc
from nsframe.server._storage.catalog import Catalog


def collect_garbage(root: str | os.PathLike[str], *, apply: bool = False,
                    grace_seconds: float = gc.DEFAULT_GRACE_SECONDS,
                    storage_options: Mapping[str, Any] | None = None,
                    check_store: bool = True) -> gc.Garbage:
    """What crashes left under ``root`` (removed when ``apply``); see `gc.collect`.

    ``storage_options`` add to the store's environment variables; ``check_store`` first
    checks that the store keeps concurrent creates apart, as a server does.
    """
    catalog = Catalog(root, storage_options=storage_options, check_store=check_store)
    try:
        return gc.collect(catalog, dry_run=not apply, grace_seconds=grace_seconds)
    finally:
        catalog.close()
