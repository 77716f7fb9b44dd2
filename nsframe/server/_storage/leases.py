"""Which servers are alive, and which writes they have in flight.

Several server processes (on one machine or many) may share a root, so leftovers of a
crashed write can only be told from a write still running by asking who wrote them. Each
server registers itself under ``_nsframe/servers/`` and renews that record; before it
writes data a table does not reference yet (a new table's folder, an insert's files) it
records the write under ``_nsframe/writes/``, and removes the record when the write has
committed or failed. A record whose server is gone marks data that can be collected.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from nsframe.server._storage.objects import Objects

log = logging.getLogger("nsframe.server")
SERVERS = "_nsframe/servers/"
WRITES = "_nsframe/writes/"
RENEW_SECONDS = 10.0
# A server that has not renewed its record for this long is taken for dead.
EXPIRY_SECONDS = 60.0
# Overrides EXPIRY_SECONDS for a server started with it (tests make leases short).
LEASE_ENV = "NSFRAME_LEASE_SECONDS"


def lease_seconds() -> float:
    """This server's lease: how long its record stands without a renewal."""
    value = float(os.environ.get(LEASE_ENV) or EXPIRY_SECONDS)
    if not value > 0:
        raise ValueError(f"{LEASE_ENV} must be a number of seconds above 0, got {value}")
    return value


@dataclass(frozen=True)
class Server:
    id: str
    host: str
    pid: int
    renewed: float
    lease: float = EXPIRY_SECONDS

    def alive(self, now: float) -> bool:
        if self.host == socket.gethostname() and not pid_alive(self.pid):
            return False
        return now - self.renewed < self.lease

    def expired(self, now: float) -> bool:
        """Dead, and its lease has run out: its record can go (`gc`)."""
        return not self.alive(now) and now - self.renewed >= self.lease


@dataclass(frozen=True)
class Write:
    key: str
    server: str
    location: str
    started: float


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has died but not been reaped yet. A worker of `nsframe serve` killed
    with its supervisor is reparented, and may stay a zombie for a while: it still
    answers signal 0, yet it will never renew its lease nor finish its writes."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read()
    except OSError:
        return False  # no /proc (macOS), or gone meanwhile
    # The state follows the command name, in parentheses that may hold spaces.
    return fields[fields.rfind(b")") + 2:][:1] == b"Z"


class Leases:
    """This server's record, its writes in flight, and everyone else's."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self.server_id = uuid.uuid4().hex
        self.lease = lease_seconds()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writes = 0  # `writing` blocks running now
        self._closed = False
        self._writes_lock = threading.Lock()

    @property
    def record_key(self) -> str:
        return f"{SERVERS}{self.server_id}.json"

    def register(self) -> None:
        self._renew()
        self._thread = threading.Thread(target=self._keep_renewing, daemon=True,
                                        name="nsframe-lease")
        self._thread.start()

    def close(self) -> None:
        """Stop renewing and remove this server's record, once no write is running: a
        server without a record is dead to the others, and the files of a dead server's
        write are garbage to collect. A write still running (a drain deadline passed)
        keeps the record renewed until it ends, or until the process does."""
        with self._writes_lock:
            self._closed = True
            running = self._writes
        if running:
            log.warning("closing with %d write(s) still running: this server's record "
                        "is kept until they end", running)
            return
        self._finish()

    def _finish(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self.objects.delete([self.record_key])

    def _renew(self) -> None:
        record = {"host": socket.gethostname(), "pid": os.getpid(), "renewed": time.time(),
                  "lease": self.lease}
        self.objects.put(self.record_key, json.dumps(record).encode())

    def _keep_renewing(self) -> None:
        # Renewed well within the lease, so that one late renewal does not end it.
        while not self._stop.wait(min(RENEW_SECONDS, self.lease / 4)):
            try:
                self._renew()
            except Exception as exc:  # a full or flaky store: the next renewal retries
                log.warning("could not renew this server's record: %s", exc)

    @contextmanager
    def writing(self, location: str) -> Iterator[None]:
        """Record a write into ``location`` (a table's folder) for the ``with`` block."""
        key = f"{WRITES}{self.server_id}-{uuid.uuid4().hex}.json"
        record = {"server": self.server_id, "location": location, "started": time.time()}
        with self._writes_lock:
            self._writes += 1
        try:
            self.objects.put(key, json.dumps(record).encode())
            try:
                yield
            finally:
                self.objects.delete([key])
        finally:
            with self._writes_lock:
                self._writes -= 1
                last = self._closed and self._writes == 0
            if last:
                self._finish()

    def store_now(self) -> float:
        """The store's clock now: the time a file written at this moment would carry."""
        key = f"{SERVERS}{self.server_id}.clock"
        self.objects.put(key, b"")
        stamp = next((o.modified.timestamp() for o in self.objects.walk(key)), time.time())
        self.objects.delete([key])
        return stamp

    def alive(self, server_id: str) -> bool:
        if server_id == self.server_id:
            return True
        record = self.servers().get(server_id)
        return record is not None and record.alive(time.time())

    def servers(self) -> dict[str, Server]:
        found: dict[str, Server] = {}
        for obj in self.objects.walk(SERVERS):
            if not obj.key.endswith(".json"):
                continue  # a `store_now` clock file
            raw = self.objects.get(obj.key)
            if raw is None:
                continue
            sid = obj.key[len(SERVERS):].removesuffix(".json")
            try:
                record = json.loads(raw)
                found[sid] = Server(sid, record["host"], int(record["pid"]),
                                    float(record["renewed"]),
                                    float(record.get("lease") or EXPIRY_SECONDS))
            except (ValueError, KeyError, TypeError):
                continue  # cut short by a full disk, say: a server that never ran
        return found

    def expired_records(self, now: float, store_now: float) -> list[str]:
        """Keys of the records (``.json``, and ``.clock`` files `store_now` left) of
        servers dead longer than their lease: never a live server's, nor a dead one's
        still within its lease, whose writes may not be judged yet."""
        servers = self.servers()
        keys: list[str] = []
        for obj in self.objects.walk(SERVERS):
            sid = obj.key[len(SERVERS):].rpartition(".")[0]
            owner = servers.get(sid)
            if sid == self.server_id or (owner is not None and not owner.expired(now)):
                continue
            # A clock file with no record: its server closed, or its record went before;
            # old enough, it is no clock being read right now.
            if owner is not None or store_now - obj.modified.timestamp() >= EXPIRY_SECONDS:
                keys.append(obj.key)
        return keys

    def writes(self) -> list[Write]:
        found: list[Write] = []
        for obj in self.objects.walk(WRITES):
            raw = self.objects.get(obj.key)
            if raw is None:
                continue
            record = json.loads(raw)
            # The store's clock, as the files the write makes will carry.
            found.append(Write(obj.key, record["server"], record["location"],
                               obj.modified.timestamp()))
        return found
