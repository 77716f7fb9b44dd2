"""One at a time, across every server on the root: turns taken in the store itself.

A merge_insert on a table without a declared primary key cannot rely on Lance to see two
merges inserting the same key (keys.py), so such merges of one table branch take turns.
A turn is an object ``_nsframe/turns/<name>/<n>.turn``, created only if absent (the
store's conditional create, as catalog entries are); the newest turn is the one in
progress until its ``<n>.done`` exists. To take the next turn a request creates
``<n+1>.turn``: of two that try, one succeeds. A turn whose server is gone (its lease
record expired, `leases.py`) is over. Turns are never deleted while they may be the
newest: whoever takes turn n+1 deletes those before it, and a request that created a
turn below the newest (its listing was older than that clean-up) gives it back.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from nsframe.exceptions import ServiceUnavailableError
from nsframe.server._storage.leases import Leases
from nsframe.server._storage.metrics import MERGE_TURN_RETRY
from nsframe.server._storage.objects import Objects

TURNS = "_nsframe/turns/"
# How long a request waits for its turn before answering 503.
WAIT_SECONDS = 60.0
FIRST_PAUSE, LONGEST_PAUSE = 0.005, 0.2

log = logging.getLogger("nsframe.server")


@contextmanager
def one_at_a_time(objects: Objects, leases: Leases, name: str, label: str) -> Iterator[None]:
    """Hold the turn of ``name`` (no ``/`` inside) for the ``with`` block."""
    folder = f"{TURNS}{name}/"
    record = json.dumps({"server": leases.server_id, "request": uuid.uuid4().hex}).encode()
    deadline = time.monotonic() + WAIT_SECONDS
    pause = FIRST_PAUSE
    while (turn := _take(objects, leases, folder, record)) is None:
        if time.monotonic() > deadline:
            raise ServiceUnavailableError(
                f"Merges into table {label!r} wait their turn (the table declares no "
                f"primary key), and this one waited {WAIT_SECONDS:.0f}s: retry, or create "
                "the table with a primary key so that merges on it run at once.",
                headers={"Retry-After": "1"},
            )
        MERGE_TURN_RETRY.inc()
        time.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE)
    try:
        yield
    finally:
        _end(objects, folder, turn)


def _take(objects: Objects, leases: Leases, folder: str, record: bytes) -> int | None:
    """The turn this call took, or None while another is in progress."""
    turns, done = _listing(objects, folder)
    newest = max(turns, default=0)
    if newest and newest not in done:
        raw = objects.get(_key(folder, newest, "turn"))
        if raw is None:
            return None  # collected meanwhile: there is a newer turn
        if leases.alive(json.loads(raw)["server"]):
            return None
        log.warning("a merge turn of a server that is gone was ended: %s", folder)
        _end(objects, folder, newest)
    mine = newest + 1
    if not objects.put_if_absent(_key(folder, mine, "turn"), record):
        return None
    later, _ = _listing(objects, folder)
    if max(later) > mine:
        _end(objects, folder, mine)  # an old listing: this turn is below the newest
        return None
    objects.delete_claimed([_key(folder, n, kind) for n in sorted(turns | done) if n < mine
                            for kind in ("turn", "done")])
    return mine


def _end(objects: Objects, folder: str, turn: int) -> None:
    for attempt in range(3):
        try:
            objects.put(_key(folder, turn, "done"), b"")
            return
        except OSError:
            if attempt == 2:
                raise
            time.sleep(0.1)


def _listing(objects: Objects, folder: str) -> tuple[set[int], set[int]]:
    turns: set[int] = set()
    done: set[int] = set()
    for obj in objects.walk(folder):
        stem, _, kind = obj.key[len(folder):].partition(".")
        if stem.isdigit():
            with suppress(KeyError):
                {"turn": turns, "done": done}[kind].add(int(stem))
    return turns, done


def _key(folder: str, turn: int, kind: str) -> str:
    return f"{folder}{turn:020d}.{kind}"
