"""Catalog changes that move a table's name, not its data: rename, register, deregister.

A table's data folder never moves: these operations only write catalog entries, each
one conditional (`entries.advance`), so any number of servers may run them at once.

**Rename** files the table's folder under the new name and then retires the old name,
in three conditional writes:

1. the old entry is marked ``renaming_to`` the new entry's folder (still live);
2. the new entry is filed, ``renamed_from`` the old folder, if the new name is free;
3. the old entry is marked ``dropped`` (``renamed_to``).

Between 2 and 3 both names are visible for an instant, never neither. A crash between
them leaves the marks, and the next lookup or listing of the old name finishes the
rename (`Catalog._settled`); a drop of either name in that window keeps the data,
since the other name still reads it (`Catalog.shares_data`).

**Deregister** removes the entry and keeps the folder: it records the folder as kept
(``_nsframe/kept/``) before the entry goes, so that no garbage collection ever takes a
deregistered table's data. **Register** files an existing dataset inside the root as a
table; a folder that is, holds or lies inside a live table's folder is refused
(`ownership`), so that dropping one name can never delete another table's data.
"""

from __future__ import annotations

import hashlib
import json

from nsframe._protocol.ids import join_id
from nsframe.exceptions import (
    ConcurrentModificationError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from nsframe.server._storage import ownership
from nsframe.server._storage.catalog import (
    LIVE_TABLE,
    TABLES,
    Catalog,
    TableRef,
    carried,
    entry_key,
)
from nsframe.server._storage.entries import Entry

KEPT = "_nsframe/kept/"


# ------------------------------------------------------------------------- rename
def rename_table(catalog: Catalog, ref: TableRef, new_parts: list[str]) -> TableRef:
    """File table ``ref`` as ``new_parts`` (any namespace) and retire its old name."""
    if new_parts == ref.id:
        return ref
    new_ns, new_folder = catalog.table_folder(new_parts, for_child=True)
    _, old_folder = catalog.table_folder(ref.id)
    target = catalog.entries.latest(new_folder)
    if target is not None and target.state in LIVE_TABLE:
        raise _exists(new_parts)
    body = catalog.entries.body(ref.entry)
    keep = {"properties": body.get("properties") or {}, **carried(body)}
    marked = catalog.entries.advance(old_folder, ref.entry, ref.state, ref.entry.uid,
                                     {**keep, "renaming_to": new_folder})
    if marked is None:
        raise _changed(ref)
    moved = {**keep, "renamed_from": old_folder}
    filed = catalog.entries.advance(new_folder, target, ref.state, ref.entry.uid, moved)
    if filed is None:
        _unmark(catalog, old_folder, marked, keep)
        raise _exists(new_parts)
    try:
        catalog.confirm_parent(new_ns, new_folder, filed)
    except Exception:
        _unmark(catalog, old_folder, marked, keep)
        raise
    _retire(catalog, ref, old_folder, marked, new_folder, filed)
    return catalog.require_table(new_parts, allow_declared=True)


def _retire(catalog: Catalog, ref: TableRef, old_folder: str, marked: Entry,
            new_folder: str, filed: Entry) -> None:
    """Step 3: the old name is dropped, unless another request changed it first."""
    current: Entry | None = marked
    while current is not None and current.state in LIVE_TABLE:
        if catalog.entries.advance(old_folder, current, "dropped", current.uid,
                                   {"renamed_to": new_folder}) is not None:
            return
        current = catalog.entries.latest(old_folder)
        if current is not None and current.uid != ref.entry.uid:
            current = None
    if current is not None and catalog.entries.body(current).get("renamed_to") == new_folder:
        return  # a lookup of the old name finished the rename for us
    # The old name was dropped while the rename ran: the drop wins, and the new name
    # goes too (its data may already be deleted).
    catalog.entries.advance(new_folder, filed, "dropped", filed.uid, {})
    raise TableNotFoundError(
        f"Table {ref.label()!r} was dropped while it was being renamed: nothing is left to "
        "rename."
    )


def _unmark(catalog: Catalog, folder: str, marked: Entry, keep: dict[str, object]) -> None:
    """Undo step 1 (best effort: a later lookup ignores a mark whose rename never
    filed its new name)."""
    catalog.entries.advance(folder, marked, marked.state, marked.uid, keep)


# ------------------------------------------------------------- register / deregister
def location_key(catalog: Catalog, location: str) -> str:
    """The key under the root of ``location``: a path relative to the root, or an
    absolute path or URI inside it. 400 for anything outside the root or not a dataset
    folder a table may own (`ownership.location_key`)."""
    return ownership.location_key(catalog, location)


def register_table(catalog: Catalog, parts: list[str], key: str, *, overwrite: bool,
                   properties: dict[str, str]) -> TableRef:
    """File the dataset folder ``key`` as table ``parts``: 409 when another table owns
    a folder that is, holds or lies inside it (docs/storage.md, Ownership)."""
    ns, folder = catalog.table_folder(parts, for_child=True)
    ownership.check_free(catalog, key, besides=folder, kept=kept_keys(catalog))
    current = catalog.entries.latest(folder)
    if current is not None and current.state in LIVE_TABLE:
        if not overwrite:
            raise _exists(parts)
        # The registration it replaces keeps its data, as a deregister does.
        replaced = entry_key(current)
        if replaced is not None and replaced != key:
            keep_folder(catalog, replaced)
    uid, body = _uid_for(catalog, parts[-1], key)
    written = catalog.entries.advance(folder, current, "created", uid,
                                      {"properties": properties, **body})
    if written is None:
        raise _exists(parts)
    catalog.confirm_parent(ns, folder, written)
    try:
        # Again, now that this entry is filed: of two registers of overlapping folders
        # on two servers at once, at least one sees the other here, and withdraws.
        ownership.check_free(catalog, key, besides=folder)
    except TableAlreadyExistsError:
        catalog.entries.advance(folder, written, "dropped", written.uid, {"withdrawn": True})
        raise
    catalog.objects.delete([_kept_marker(key)])
    return catalog.require_table(parts)


def _uid_for(catalog: Catalog, name: str, key: str) -> tuple[str, dict[str, str]]:
    """A folder of the usual form keeps its own uid; any other is named by ``key``."""
    stem = key[len(TABLES):-len(".lance")] if key.startswith(TABLES) else ""
    if stem and "/" not in stem and key.endswith(".lance"):
        return stem, {}
    return catalog.new_table_uid(name), {"key": key}


def deregister_table(catalog: Catalog, ref: TableRef) -> None:
    """Remove table ``ref`` from the catalog, keeping its data where it is."""
    if ref.state == "created":
        keep_folder(catalog, ref.key)
    _, folder = catalog.table_folder(ref.id)
    current: Entry | None = ref.entry
    while current is not None and current.state in LIVE_TABLE:
        if catalog.entries.advance(folder, current, "dropped", current.uid,
                                   {"deregistered": True}) is not None:
            catalog.forget(ref)
            return
        current = catalog.entries.latest(folder)
    raise TableNotFoundError(f"Table {ref.label()!r} does not exist.")


def keep_folder(catalog: Catalog, key: str) -> None:
    """Record ``key`` as data no garbage collection may take (`gc` reads `kept_keys`)."""
    catalog.objects.put(_kept_marker(key), json.dumps({"key": key}).encode())


def kept_keys(catalog: Catalog) -> set[str]:
    keys: set[str] = set()
    for obj in catalog.objects.walk(KEPT):
        raw = catalog.objects.get(obj.key)
        if raw:
            keys.add(str(json.loads(raw).get("key")))
    return keys


def _kept_marker(key: str) -> str:
    return f"{KEPT}{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def _exists(parts: list[str]) -> TableAlreadyExistsError:
    return TableAlreadyExistsError(
        f"Table {join_id(parts)!r} already exists: pick another name, or drop it first."
    )


def _changed(ref: TableRef) -> ConcurrentModificationError:
    return ConcurrentModificationError(
        f"Table {ref.label()!r} changed while it was being renamed: retry."
    )
