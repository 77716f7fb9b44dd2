"""The catalog: which namespaces and tables exist, and where each table's data lives.

Layout under the root (see docs/storage.md)::

    _catalog/<ns uid>/ns/<name>/<gen>.<state>.<uid>.json   child namespaces of <ns uid>
    _catalog/<ns uid>/t/<name>/<gen>.<state>.<uid>.json    tables of <ns uid>
    tables/<uid>.lance/                                    one table incarnation (Lance)
    _nsframe/                                              servers, writes in flight, merge turns

Every entry is a generation log (`entries`), changed only by create-if-absent writes,
so the contract's rules hold with any number of server processes on one root. Two
identity rules make drops final: a namespace incarnation has its own uid, and its
children are filed under that uid, so a dropped and re-created namespace starts empty
whatever a racing writer filed under the old one; a table incarnation has its own data
folder, so a re-created table never shares files, caches or versions with the old one.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe._protocol.defaults import normalize_branch
from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id
from nsframe.exceptions import (
    ConcurrentModificationError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from nsframe.server._storage.datasets import DatasetCache
from nsframe.server._storage.entries import Entries, Entry
from nsframe.server._storage.freshness import Freshness
from nsframe.server._storage.leases import Leases
from nsframe.server._storage.location import StorageRoot, relation
from nsframe.server._storage.objects import Objects
from nsframe.server._storage.reach import reaching
from nsframe.server._storage.turns import Turns

CATALOG = "_catalog/"
TABLES = "tables/"
ROOT_UID = "root"
# A drop marks its namespace "dropping" while it checks the contents: creations in it
# wait for the outcome. A mark older than this was left by a crashed drop.
DROPPING_SECONDS = 30.0
LIVE_NAMESPACE = ("active", "dropping")
LIVE_TABLE = ("declared", "created")
_SLUG = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True)
class Namespace:
    id: list[str]
    uid: str
    entry: Entry | None  # None for the root namespace, which always exists


@dataclass(frozen=True)
class TableRef:
    """A table incarnation: its identifier, its catalog entry and where its data is."""

    id: list[str]
    entry: Entry
    # Where the data is, or will be for a declared table ("" for one declared before
    # declares reserved a folder).
    uri: str

    @property
    def name(self) -> str:
        return self.id[-1]

    @property
    def state(self) -> str:
        return self.entry.state

    @property
    def key(self) -> str:
        """The data folder's key under the root."""
        return entry_key(self.entry) or table_key(self.entry.uid)

    def label(self, delimiter: str = DEFAULT_DELIMITER) -> str:
        return join_id(self.id, delimiter)


@dataclass(frozen=True)
class Manifest:
    """A version's manifest file: its path inside the table's folder, and its size."""

    path: str
    size: int


# Lance names V2 manifests by the inverted version, so that the newest lists first.
_U64_MAX = 2**64 - 1


def table_key(uid: str) -> str:
    return f"{TABLES}{uid}.lance"


def inside_data_folder(key: str) -> bool:
    """Whether ``key`` is ``tables/`` itself or a folder inside one of its data folders
    (a branch tree, the data files): each folder in ``tables/`` is one table's, whole."""
    parts = [p for p in key.split("/") if p]
    return parts[:1] == [TABLES.rstrip("/")] and len(parts) != 2


def entry_key(entry: Entry) -> str | None:
    """The data folder of a table entry: a registered table's own (its body's ``key``),
    else ``tables/<uid>.lance``; None for a table declared without a folder (before
    declares reserved one)."""
    key = (entry.body or {}).get("key")
    if isinstance(key, str) and key:
        return key
    return None if entry.uid in ("", "none") else table_key(entry.uid)


# Members a table entry's next generation keeps: a registered table's folder, and the
# name a rename came from (`_settled` reads it after a crash).
CARRIED = ("key", "renamed_from")


def carried(body: dict[str, object]) -> dict[str, object]:
    return {k: body[k] for k in CARRIED if k in body}


class Catalog:
    """Namespaces and tables under one storage root.

    ``storage_options`` reach the store (see `location`); ``check_store`` refuses a store
    that does not keep concurrent creates apart (`Objects.check_conditional_create`);
    ``read_consistency_interval`` is how stale a read may be (`freshness`);
    ``vend_storage_options`` hands the options to readers in ``describe``.
    """

    def __init__(self, root: str | os.PathLike[str] | StorageRoot, *,
                 storage_options: Mapping[str, Any] | None = None,
                 check_store: bool = True, read_consistency_interval: float = 0.0,
                 vend_storage_options: bool = False) -> None:
        location = (root if isinstance(root, StorageRoot)
                    else StorageRoot.parse(root, storage_options))
        # The first requests to the root: a missing bucket, refused credentials or a
        # silent endpoint show here, and are said in one line (`reach`).
        with reaching(location):
            self.objects = Objects(location)
            if check_store:
                self.objects.check_conditional_create()
            self.leases = Leases(self.objects)
            self.leases.register()
        self.location = self.objects.location
        self.root = self.objects.root
        self.freshness = Freshness(read_consistency_interval)
        self.entries = Entries(self.objects, self.freshness)
        self.turns = Turns(self.objects)
        self.datasets = DatasetCache(self.location.lance_options(), freshness=self.freshness)
        self.session = self.datasets.session
        # What describe hands to readers of a table's location, when the operator opted in.
        self.vended_options: dict[str, str] | None = (
            dict(self.location.options) if vend_storage_options else None)
        self._on_close: list[Callable[[], None]] = []

    def on_close(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` first when the catalog closes (work in a thread of its own that
        uses the catalog, such as the start-up collection)."""
        self._on_close.append(stop)

    def close(self) -> None:
        """Stop the work that uses this catalog in threads of its own (`on_close`) and the
        lease renewal thread, and remove this server's record."""
        for stop in self._on_close:
            stop()
        self.leases.close()

    def ping(self, timeout: float) -> None:
        """One small request to the store (a HEAD of this server's record); raises when
        the store does not answer within ``timeout`` seconds."""
        self.objects.ping(self.leases.record_key, timeout)

    # ----------------------------------------------------------------- namespaces
    @staticmethod
    def _ns_folder(parent_uid: str, name: str) -> str:
        return f"{CATALOG}{parent_uid}/ns/{name}/"

    @staticmethod
    def _table_folder(ns_uid: str, name: str) -> str:
        return f"{CATALOG}{ns_uid}/t/{name}/"

    def find_namespace(self, parts: list[str]) -> Namespace | None:
        uid, entry = ROOT_UID, None
        for depth, name in enumerate(parts):
            entry = self.entries.latest(self._ns_folder(uid, name))
            if entry is None or entry.state not in LIVE_NAMESPACE:
                return None
            uid = entry.uid
            if depth == len(parts) - 1:
                break
        return Namespace(parts, uid, entry)

    def namespace_exists(self, parts: list[str]) -> bool:
        return self.find_namespace(parts) is not None

    def require_namespace(self, parts: list[str], *, status: int | None = None,
                          for_child: bool = False) -> Namespace:
        """The namespace ``parts``; ``for_child``: one a new child may be filed under."""
        ns = self.find_namespace(parts)
        if ns is None:
            raise NamespaceNotFoundError(
                f"Namespace {join_id(parts)!r} does not exist: create it first.",
                status=status,
            )
        if for_child and self.being_dropped(ns.entry):
            raise ConcurrentModificationError(
                f"Namespace {join_id(parts)!r} is being dropped: retry once the drop "
                "has finished."
            )
        return ns

    def namespace_properties(self, parts: list[str]) -> dict[str, str]:
        ns = self.require_namespace(parts)
        return self._properties(ns.entry)

    def _properties(self, entry: Entry | None) -> dict[str, str]:
        if entry is None:
            return {}
        return dict(self.entries.body(entry).get("properties") or {})

    def create_namespace(
        self, parts: list[str], mode: str, properties: dict[str, str] | None
    ) -> dict[str, str]:
        if not parts:
            if mode == "Create":
                raise NamespaceAlreadyExistsError("The root namespace always exists.")
            return {}
        parent = self.require_namespace(parts[:-1], for_child=True)
        folder = self._ns_folder(parent.uid, parts[-1])
        while True:
            current = self.entries.latest(folder)
            exists = current is not None and current.state in LIVE_NAMESPACE
            if exists and mode == "Create":
                raise NamespaceAlreadyExistsError(
                    f"Namespace {join_id(parts)!r} already exists: use mode ExistOk to "
                    "reuse it or Overwrite to replace its properties."
                )
            if exists and mode == "ExistOk":
                return self._properties(current)
            uid = current.uid if exists and current is not None else _new_uid()
            written = self.entries.advance(folder, current, "active", uid,
                                           {"properties": properties or {}})
            if written is not None:
                self._confirm_parent(parent, folder, written)
                return dict(properties or {})

    def _confirm_parent(self, parent: Namespace, folder: str, written: Entry) -> None:
        """Withdraw ``written`` (a new child of ``parent``) if the parent was dropped, or
        began a drop, before the child was filed: a drop never misses a child it
        acknowledged, and a child never outlives its namespace."""
        if parent.entry is None:
            return
        now = self.find_namespace(parent.id)
        if now is not None and now.uid == parent.uid and not self.being_dropped(now.entry):
            return
        self.entries.advance(folder, written, "dropped", written.uid, {})
        raise NamespaceNotFoundError(
            f"Namespace {join_id(parent.id)!r} was dropped while this request ran: "
            "nothing was created."
        )

    def confirm_parent(self, parent: Namespace, folder: str, written: Entry) -> None:
        self._confirm_parent(parent, folder, written)

    def list_namespaces(self, parts: list[str]) -> list[str]:
        ns = self.require_namespace(parts)
        return self._live_children(ns.uid, "ns", LIVE_NAMESPACE)

    def _live_children(self, uid: str, kind: str, live: tuple[str, ...]) -> list[str]:
        below = self.entries.latest_below(f"{CATALOG}{uid}/{kind}/")
        return sorted(name for name, entry in below.items() if entry.state in live)

    def drop_namespace(self, parts: list[str], behavior: str) -> dict[str, str]:
        if not parts:
            raise InvalidInputError("The root namespace cannot be dropped.")
        ns = self.require_namespace(parts)
        assert ns.entry is not None
        folder = ns.entry.folder
        properties = self._properties(ns.entry)
        marked = self.entries.advance(folder, ns.entry, "dropping", ns.uid,
                                      {"properties": properties, "by": self.leases.server_id})
        if marked is None:
            raise _changed(parts)
        children = self._live_children(ns.uid, "ns", LIVE_NAMESPACE)
        tables = self._live_children(ns.uid, "t", LIVE_TABLE)
        if (children or tables) and behavior == "Restrict":
            self.entries.advance(folder, marked, "active", ns.uid, {"properties": properties})
            raise NamespaceNotEmptyError(
                f"Namespace {join_id(parts)!r} holds {len(tables)} table(s) and "
                f"{len(children)} namespace(s): drop them first, or use behavior Cascade."
            )
        # One write makes the namespace and everything below it unreachable; the data
        # goes afterwards, and what a crash leaves of it is collected at start-up.
        if self.entries.advance(folder, marked, "dropped", ns.uid, {}) is None:
            raise _changed(parts)
        self.purge_namespace(ns.uid)
        return properties

    def purge_namespace(self, uid: str, live: list[Entry] | None = None) -> None:
        """Delete the data and entries filed under a dropped namespace incarnation
        (``live``: the live tables, read once for the whole purge when needed)."""
        for entry in self.entries.latest_below(f"{CATALOG}{uid}/ns/").values():
            self.purge_namespace(entry.uid, live)
        for entry in self.entries.latest_below(f"{CATALOG}{uid}/t/").values():
            if live is None and "key" in self.entries.body(entry):
                live = self.reachable(fresh=True)[1]
            # A table being renamed into another namespace keeps its data there.
            if self.owns_data(entry, live):
                self.objects.delete_folder(f"{entry_key(entry)}/")
        self.objects.delete_folder(f"{CATALOG}{uid}/")

    def being_dropped(self, entry: Entry | None) -> bool:
        if entry is None or entry.state != "dropping":
            return False
        body = self.entries.body(entry)
        if time.time() - float(body.get("at") or 0) >= DROPPING_SECONDS:
            return False  # a mark left by a drop that stopped
        return self.leases.alive(str(body.get("by")))

    # --------------------------------------------------------------------- tables
    def table_folder(self, parts: list[str], *, for_child: bool = False) -> tuple[Namespace, str]:
        if not parts:
            raise InvalidInputError("A table identifier needs at least one part: the table name.")
        ns = self.require_namespace(parts[:-1], for_child=for_child)
        return ns, self._table_folder(ns.uid, parts[-1])

    def find_table(self, parts: list[str]) -> TableRef | None:
        return self.lookup_table(parts)[1]

    def lookup_table(self, parts: list[str]) -> tuple[Entry | None, TableRef | None]:
        """The newest generation of table ``parts`` (a tombstone too), and the table if it
        exists: a create must file its table after exactly the generation it checked."""
        _, folder = self.table_folder(parts)
        entry = self.entries.latest(folder)
        if entry is not None and entry.state in LIVE_TABLE:
            entry = self._settled(folder, entry)
        if entry is None or entry.state not in LIVE_TABLE:
            return entry, None
        return entry, self._ref(parts, entry)

    def _ref(self, parts: list[str], entry: Entry) -> TableRef:
        key = entry_key(entry)
        return TableRef(parts, entry, self.objects.uri(key) if key else "")

    def _settled(self, folder: str, entry: Entry) -> Entry:
        """``entry``, with what another request left half done finished first: a declared
        table whose reserved folder now holds a dataset (a client wrote it at the
        declared location) becomes created; the old name of a rename whose new name is
        filed (`registry.rename_table`, maybe cut short by a crash) is retired."""
        body = self.entries.body(entry)
        after: Entry | None = entry
        if entry.state == "declared" and self.holds_dataset(entry_key(entry)):
            after = self.entries.advance(folder, entry, "created", entry.uid,
                                         {"properties": body.get("properties") or {},
                                          **carried(body)})
        elif self.superseded(entry):
            after = self.entries.advance(folder, entry, "dropped", entry.uid,
                                         {"renamed_to": body["renaming_to"]})
        else:
            return entry
        # Another request may have finished it first: read what is there now.
        return after or self.entries.latest(folder) or entry

    def holds_dataset(self, key: str | None) -> bool:
        """Whether the folder ``key`` holds a Lance dataset (a committed manifest)."""
        if key is None:
            return False
        return any(o.key.endswith(".manifest") for o in self.objects.walk(f"{key}/_versions/"))

    def superseded(self, entry: Entry) -> bool:
        """Whether ``entry`` is the old name of a rename whose new name is filed."""
        return self._rename_partner(entry, "renaming_to", "renamed_from")

    def shares_data(self, entry: Entry) -> bool:
        """Whether another live entry names ``entry``'s data folder (a rename under way):
        dropping one of the two names must not delete the other's data."""
        return self.superseded(entry) \
            or self._rename_partner(entry, "renamed_from", "renaming_to")

    def _rename_partner(self, entry: Entry, link: str, back: str) -> bool:
        """Whether the entry that ``entry``'s body names under ``link`` is live, of the
        same table, and names ``entry`` back under ``back``: the two ends of a rename."""
        target = self.entries.body(entry).get(link)
        if not isinstance(target, str):
            return False
        other = self.entries.latest(target)
        return (other is not None and other.state in LIVE_TABLE and other.uid == entry.uid
                and self.entries.body(other).get(back) == entry.folder)

    def reachable(self, *, fresh: bool = False) -> tuple[set[str], list[Entry]]:
        """The namespace incarnations reachable from the root, and the live table entries
        filed under them (declared ones too: a client may be writing their folder)."""
        uids: set[str] = set()
        tables: list[Entry] = []
        pending = [ROOT_UID]
        while pending:
            uid = pending.pop()
            uids.add(uid)
            below = self.entries.latest_below(f"{CATALOG}{uid}/ns/", fresh=fresh)
            pending.extend(e.uid for e in below.values() if e.state in LIVE_NAMESPACE)
            tables.extend(e for e in self.entries.latest_below(f"{CATALOG}{uid}/t/",
                                                               fresh=fresh).values()
                          if e.state in LIVE_TABLE)
        return uids, tables

    def owns_data(self, entry: Entry, live: list[Entry] | None = None) -> bool:
        """Whether dropping ``entry`` may delete its data folder: it is a created table's,
        no rename under way gives it a second name, and, for a registered folder, no
        other live table's folder is, holds or lies inside it (a root registered into
        before ownership was checked may hold such a pair: the drop then keeps the data)."""
        key = entry_key(entry)
        if entry.state != "created" or key is None or self.shares_data(entry):
            return False
        if "key" not in self.entries.body(entry):
            return True  # tables/<uid>.lance: a folder this server made for the entry
        if inside_data_folder(key):
            return False
        if live is None:
            live = self.reachable(fresh=True)[1]
        return not any(other.folder != entry.folder and (found := entry_key(other))
                       and relation(key, found) for other in live)

    def table_state(self, parts: list[str]) -> str:
        """'created', 'declared' or 'missing'."""
        ref = self.find_table(parts)
        return "missing" if ref is None else ref.state

    def require_table(self, parts: list[str], *, allow_declared: bool = False) -> TableRef:
        ref = self.find_table(parts)
        if ref is None or (ref.state == "declared" and not allow_declared):
            hint = " (it is only declared: insert data to create it)" if ref else ""
            raise TableNotFoundError(f"Table {join_id(parts)!r} does not exist{hint}.")
        return ref

    def table_properties(self, ref: TableRef) -> dict[str, str]:
        return self._properties(ref.entry)

    def list_tables(self, ns_parts: list[str], *, include_declared: bool = True) -> list[str]:
        ns = self.require_namespace(ns_parts)
        return self._tables_of(ns.uid, LIVE_TABLE if include_declared else ("created",))

    def _tables_of(self, uid: str, live: tuple[str, ...]) -> list[str]:
        below = self.entries.latest_below(f"{CATALOG}{uid}/t/")
        # The old name of a rename is listed no more once the new name is filed.
        return sorted(name for name, entry in below.items()
                      if entry.state in live and not self.superseded(entry))

    def walk_tables(self, ns_parts: list[str]) -> list[list[str]]:
        """Every table below ``ns_parts``, as full identifiers: two listings for each
        namespace (its tables, its children), each found once from its parent."""
        found: list[list[str]] = []
        pending = [(ns_parts, self.require_namespace(ns_parts).uid)]
        while pending:
            parts, uid = pending.pop()
            found.extend([*parts, t] for t in self._tables_of(uid, LIVE_TABLE))
            below = self.entries.latest_below(f"{CATALOG}{uid}/ns/")
            pending.extend(([*parts, name], entry.uid) for name, entry in sorted(below.items())
                           if entry.state in LIVE_NAMESPACE)
        return found

    def declare_table(self, parts: list[str], properties: dict[str, str] | None) -> TableRef:
        ns, folder = self.table_folder(parts, for_child=True)
        current = self.entries.latest(folder)
        if current is not None and current.state in LIVE_TABLE:
            raise TableAlreadyExistsError(f"Table {join_id(parts)!r} already exists.")
        # The data folder is reserved now, so that the answer can name its location: a
        # client may write the dataset there itself (LanceDB's namespace connection).
        written = self.entries.advance(folder, current, "declared",
                                       self.new_table_uid(parts[-1]),
                                       {"properties": properties or {}})
        if written is None:
            raise TableAlreadyExistsError(
                f"Table {join_id(parts)!r} was created by another request at the same time."
            )
        self._confirm_parent(ns, folder, written)
        return self._ref(parts, written)

    def new_table_uid(self, name: str) -> str:
        """A fresh data folder name for an incarnation of table ``name``."""
        slug = _SLUG.sub("_", name.lower())[:40].strip("_") or "t"
        return f"{slug}-{uuid.uuid4().hex[:16]}"

    def commit_created(self, parts: list[str], previous: Entry | None, uid: str,
                       properties: dict[str, str]) -> TableRef | None:
        """File the data folder ``uid`` as table ``parts``, if the entry is still at
        ``previous``; None if another request changed it first."""
        ns, folder = self.table_folder(parts, for_child=True)
        written = self.entries.advance(folder, previous, "created", uid,
                                       {"properties": properties})
        if written is None:
            return None
        self._confirm_parent(ns, folder, written)
        return self._ref(parts, written)

    def set_table_properties(self, ref: TableRef, properties: dict[str, str]) -> None:
        """Replace the properties of table ``ref`` (a conditional write, retried)."""
        folder = ref.entry.folder
        current: Entry | None = ref.entry
        # Only this incarnation: a table dropped and created again meanwhile is another.
        while current is not None and current.state in LIVE_TABLE \
                and current.uid == ref.entry.uid:
            body = {"properties": properties, **carried(self.entries.body(current))}
            if self.entries.advance(folder, current, current.state, current.uid,
                                    body) is not None:
                return
            current = self.entries.latest(folder)
        raise TableNotFoundError(f"Table {ref.label()!r} does not exist.")

    def drop_table(self, ref: TableRef) -> None:
        folder = ref.entry.folder
        current = ref.entry
        while self.entries.advance(folder, current, "dropped", current.uid, {}) is None:
            latest = self.entries.latest(folder)
            if latest is None or latest.state not in LIVE_TABLE:
                raise TableNotFoundError(f"Table {ref.label()!r} does not exist.")
            current = latest
        key = entry_key(current)
        # The data stays when a rename under way gave it a second name.
        if key is not None and self.owns_data(current):
            self.datasets.forget(self.objects.uri(key))
            self.objects.delete_folder(key + "/")

    def delete_data(self, uid: str) -> None:
        self.objects.delete_folder(table_key(uid) + "/")

    # ------------------------------------------------------------------- datasets
    def dataset(self, ref: TableRef, *, branch: str | None = None,
                version: int | None = None) -> LanceDataset:
        """A dataset object of this request's own: the table at the latest version of
        ``branch``, or at ``version`` of it."""
        return self.datasets.get(ref.uri, ref.label(), normalize_branch(branch), version)

    def schema(self, ref: TableRef, branch: str | None, ds: LanceDataset) -> pa.Schema:
        """The schema of ``ds``, which `dataset` gave for ``ref`` on ``branch``."""
        return self.datasets.schema(ref.uri, normalize_branch(branch), ds)

    def walker(self, ref: TableRef, branch: str | None) -> LanceDataset:
        """The latest version of ``branch``, for reading many versions once each: its
        caches are its own (`DatasetCache.walker`)."""
        return self.datasets.walker(ref.uri, ref.label(), normalize_branch(branch))

    def manifests(self, ref: TableRef, branch: str | None) -> dict[int, Manifest]:
        """The manifest of every version of ``branch``, from one listing."""
        name = normalize_branch(branch)
        folder = "_versions/" if name is None else f"tree/{name}/_versions/"
        found: dict[int, Manifest] = {}
        prefix = f"{ref.key}/"
        for obj in self.objects.walk(prefix + folder):
            stem, _, ext = obj.key.rsplit("/", 1)[-1].partition(".")
            if ext != "manifest" or not stem.isdigit():
                continue
            number = int(stem)
            # 20 digits is V2's inverted naming; shorter names are V1's plain numbers.
            version = _U64_MAX - number if len(stem) == 20 else number
            found[version] = Manifest(obj.key[len(prefix):], obj.size)
        return found

    def forget(self, ref: TableRef) -> None:
        """Drop the kept datasets of ``ref`` (after a branch is created or deleted)."""
        self.datasets.forget(ref.uri)

    def remember(self, ref: TableRef, branch: str | None, ds: LanceDataset) -> None:
        """Keep ``ds`` (which this request no longer uses) as the newest known state."""
        self.datasets.remember(ref.uri, normalize_branch(branch), ds)


def _new_uid() -> str:
    return uuid.uuid4().hex[:16]


def _changed(parts: list[str]) -> ConcurrentModificationError:
    return ConcurrentModificationError(
        f"Namespace {join_id(parts)!r} changed while it was being dropped: retry."
    )

