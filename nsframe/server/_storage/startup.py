"""Start-up's collection of what crashed servers left, beside serving rather than before.

A collection reads every table's versions (`gc.collect`), so on a root of 10,000 tables
it takes minutes; a server that waited for it would not answer meanwhile. Collecting
while serving is safe for the reason collecting beside other live servers is: nothing a
live server (this one included) may still be writing is ever a candidate. So the server
serves at once, and one thread collects; a server that stops first stops it (nothing is
removed by a collection that did not finish), and the next start tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from nsframe.server._storage import gc
from nsframe.server._storage.catalog import Catalog

log = logging.getLogger("nsframe.server")


class StartupCollection:
    """Collect garbage in ``catalogs``, one after another, in a thread of its own.

    ``close_when_done`` closes the catalogs after it (the catalogs were opened for the
    collection alone); otherwise their owner closes them, which stops the collection
    first (`Catalog.on_close`).
    """

    def __init__(self, catalogs: Sequence[Catalog], *, close_when_done: bool = False) -> None:
        self.catalogs = list(catalogs)
        self.close_when_done = close_when_done
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nsframe-startup-gc",
                                        daemon=True)
        if not close_when_done:
            for catalog in self.catalogs:
                catalog.on_close(self.stop)

    def start(self) -> StartupCollection:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the collection (between two tables) and wait for its thread."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            for catalog in self.catalogs:
                self._collect(catalog)
        finally:
            if self.close_when_done:
                for catalog in self.catalogs:
                    catalog.close()
            self.finished.set()

    def _collect(self, catalog: Catalog) -> None:
        started = time.monotonic()
        try:
            garbage = gc.collect(catalog, dry_run=False, stop=self._stop)
        except gc.Stopped:
            log.info("start-up collection of %s stopped with the server; the next start "
                     "collects", catalog.root)
        except Exception as exc:  # a store that failed for a moment: the next start retries
            log.warning("start-up collection of %s failed, nothing removed: %s",
                        catalog.root, exc)
        else:
            log.info("start-up collection of %s finished in %.1f s (%d folder(s), %d "
                     "file(s))", catalog.root, time.monotonic() - started,
                     len(garbage.folders), len(garbage.keys))
