"""Capacity: separate lanes of worker threads, so one kind of work cannot starve another.

Handlers block (Lance calls, body reads), so each runs in a worker thread. With one pool
for everything, 40 stalled uploads or 40 slow scans held every thread, and describe or
list got no answer at all. Each route declares its weight instead, and each weight has
its own lane of threads:

- ``light``: metadata (describe, list, exists, namespaces, tags, versions); fast;
- ``heavy``: work that scans data (query, count_rows, delete, index builds, optimize);
- ``upload``: work that reads an Arrow body as it arrives (create, insert), which a slow
  or stalled client can hold for as long as its body timeouts allow.

A request waits for a slot of its lane on the event loop, holding no thread; after
`Limits.queue_timeout` seconds it gets 503 with ``Retry-After``. A slot is held until
the answer is sent, streamed results included, so the number of threads doing a lane's
work never exceeds its slots.

In the upload lane, one credential and one client address each hold at most
`Limits.upload_share` slots (`Shares`): eight trickling uploads of one client held all
eight, and locked every other writer out for the hour of `body_timeout`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from nsframe.exceptions import InvalidInputError, ServiceUnavailableError
from nsframe.server._http import metrics
from nsframe.server._limits import Limits

Weight = Literal["light", "heavy", "upload"]
WEIGHTS: tuple[Weight, ...] = ("light", "heavy", "upload")

# `_security.credentials.ANONYMOUS.name` (that package imports this one): a server
# without credentials calls every request that, so it is no one's credential.
ANONYMOUS = "anonymous"
# What each lane is called in a 503's detail.
_WORK = {"light": "metadata requests", "heavy": "queries and scans", "upload": "uploads"}


@dataclass
class _Share:
    semaphore: anyio.Semaphore
    users: int = 0  # requests of the client that hold or wait for a slot


class Shares:
    """How many slots of a lane each client holds, at most ``share`` each.

    A client is a key (a credential, an address); its entry lives while one of its
    requests holds or waits for a slot, so the table stays as small as the traffic.
    Used on the event loop only.
    """

    def __init__(self, share: int) -> None:
        self.share = share
        self._clients: dict[str, _Share] = {}

    async def acquire(self, key: str) -> Callable[[], None]:
        """Wait for one of ``key``'s slots (cancellable); returns the call that frees it."""
        entry = self._clients.setdefault(key, _Share(anyio.Semaphore(self.share)))
        entry.users += 1

        def leave() -> None:
            entry.users -= 1
            if entry.users == 0:
                del self._clients[key]

        try:
            await entry.semaphore.acquire()
        except BaseException:
            leave()
            raise

        def release() -> None:
            entry.semaphore.release()
            leave()

        return release


class Lane:
    """Slots for one weight: admission on the event loop, then a thread of its own pool.
    With ``gauges``, its slots, the slots in use and the requests waiting are shown on
    ``/metrics`` (`_http.metrics`)."""

    def __init__(self, weight: Weight, slots: int, queue_timeout: float,
                 share: int | None = None, *, gauges: bool = False) -> None:
        self.weight = weight
        self.slots = slots
        self.queue_timeout = queue_timeout
        self.gauges = LaneGauges(weight, slots) if gauges else None
        # None: a client may take every slot (light and heavy work end on their own).
        self.shares = Shares(share) if share is not None else None
        # Created on first use, inside the server's event loop.
        self._admission: anyio.Semaphore | None = None
        self._threads: anyio.CapacityLimiter | None = None

    def _freeing(self, admission: anyio.Semaphore) -> Callable[[], None]:
        """The call that frees a slot taken at once (and counts it in use meanwhile)."""
        if self.gauges is None:
            return admission.release
        in_use = self.gauges.in_use
        in_use.inc()

        def free() -> None:
            in_use.dec()
            admission.release()
        return free

    @property
    def threads(self) -> anyio.CapacityLimiter:
        """The lane's thread pool: never waited on, since admission holds a slot first."""
        if self._threads is None:
            self._threads = anyio.CapacityLimiter(self.slots)
        return self._threads

    async def admit(self, clients: tuple[str, ...] = ()) -> Callable[[], None]:
        """Wait for a slot (at most ``queue_timeout``), and for a share of each of
        ``clients`` (its credential, its address) first; returns the call that frees
        them all."""
        if self._admission is None:
            self._admission = anyio.Semaphore(self.slots)
        admission = self._admission
        if self.shares is None and admission.value > 0:
            # A slot is free (and so nobody waits): taken at once, with no cancel scope
            # and no trip round the event loop, as `acquire` would have taken it.
            admission.acquire_nowait()
            return _once(self._freeing(admission))
        releases: list[Callable[[], None]] = []

        def release() -> None:
            while releases:
                releases.pop()()

        waiting_for_share = self.shares is not None and bool(clients)
        # Counted as queued only when no slot is free on arrival: most requests get one at
        # once, and skip the gauge's two updates.
        gauges = self.gauges if self.gauges is not None and (
            waiting_for_share or admission.value == 0) else None
        if gauges is not None:
            gauges.waiting.inc()
        try:
            with anyio.move_on_after(self.queue_timeout):
                try:
                    if self.shares is not None:
                        for client in clients:
                            releases.append(await self.shares.acquire(client))
                    waiting_for_share = False
                    await admission.acquire()
                except BaseException:
                    release()
                    raise
                releases.append(admission.release)
                if self.gauges is not None:
                    self.gauges.in_use.inc()
                    releases.append(self.gauges.in_use.dec)
                return _once(release)
        finally:
            if gauges is not None:
                gauges.waiting.dec()
        # Timed out: what was taken has been freed on the way out.
        retry = {"Retry-After": str(max(1, math.ceil(self.queue_timeout / 10)))}
        if waiting_for_share:
            assert self.shares is not None
            raise ServiceUnavailableError(
                f"This client already holds {self.shares.share} of the {self.slots} upload "
                f"slots, its most at once (limit upload_slots_per_client, per credential "
                f"and per client address), and none came free in {self.queue_timeout:g} s: "
                "retry when one of its uploads has finished.",
                headers=retry,
            )
        raise ServiceUnavailableError(
            f"The server is busy: all {self.slots} slots for {_WORK[self.weight]} stayed in "
            f"use for {self.queue_timeout:g} s (limit {self.weight}_slots): retry shortly.",
            headers=retry,
        )


def _once(call: Callable[[], None]) -> Callable[[], None]:
    done = False

    def once() -> None:
        nonlocal done
        if not done:
            done = True
            call()

    return once


def clients_of(scope: Scope) -> tuple[str, ...]:
    """Whom a request's upload slot counts against: its credential (none without
    credentials, where everyone is anonymous) and its client's address."""
    keys = []
    principal = scope.get("nsframe.principal")
    if principal and principal != ANONYMOUS:
        keys.append(f"credential {principal}")
    client = scope.get("client")
    if client:
        keys.append(f"address {client[0]}")
    return tuple(keys)


class LaneGauges:
    """One lane's gauges, bound once; its slots are added to the process's total."""

    def __init__(self, weight: Weight, slots: int) -> None:
        self.waiting = metrics.LANE_WAITING.labels(weight)
        self.in_use = metrics.LANE_IN_USE.labels(weight)
        metrics.LANE_SLOTS.labels(weight).inc(slots)


class Capacity:
    """The lanes of one app; ``gauges``: shown on ``/metrics``."""

    def __init__(self, limits: Limits, *, gauges: bool = False) -> None:
        self.lanes = {
            "light": Lane("light", limits.light_slots, limits.queue_timeout, gauges=gauges),
            "heavy": Lane("heavy", limits.heavy_slots, limits.queue_timeout, gauges=gauges),
            "upload": Lane("upload", limits.upload_slots, limits.queue_timeout,
                           share=limits.upload_share, gauges=gauges),
        }

    def lane(self, weight: Weight) -> Lane:
        return self.lanes[weight]


class HeldResponse(Response):
    """``inner`` sent as it is, then the lane's slot freed, whatever happened meanwhile
    (a streamed result that failed, a client that hung up, a cancelled task)."""

    def __init__(self, inner: Response, release: Callable[[], None]) -> None:
        # Not Response.__init__: the inner response renders everything itself.
        self.inner = inner
        self.release = release
        self.status_code = inner.status_code
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        finally:
            self.release()


class WorkStopped(InvalidInputError):
    """The work of a request stopped before its end: its deadline passed, or its client
    hung up (then nobody reads the answer)."""


class Work:
    """The deadline and the client's presence of one request, checked between batches.

    Lance calls cannot be interrupted, but scans come in batches: a handler calls
    `check` between them, so the work stops within one batch of the deadline, or of the
    client hanging up (`client_gone`, set from the event loop).
    """

    def __init__(self, timeout: float, lane: Lane | None = None) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.lane = lane
        self.gone = threading.Event()

    @property
    def threads(self) -> anyio.CapacityLimiter | None:
        return self.lane.threads if self.lane is not None else None

    def client_gone(self) -> None:
        self.gone.set()

    def expired(self) -> bool:
        return self.gone.is_set() or time.monotonic() > self.deadline

    def check(self) -> None:
        """Raise `WorkStopped` when the work should stop."""
        if self.gone.is_set():
            raise WorkStopped("The client closed the connection, so the work stopped.")
        if time.monotonic() > self.deadline:
            raise WorkStopped(
                f"The request ran longer than this server's limit of {self.timeout:g} s for "
                "queries and scans (query_timeout), so it stopped: narrow the filter, ask "
                "for fewer rows, or build an index on the filtered columns."
            )
