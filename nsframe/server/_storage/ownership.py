"""Ownership of storage: which folder a register may file, so that no two catalog entries
own overlapping folders (docs/storage.md, Ownership).

A location becomes a key under the root as the store itself would read it: on a local
root every symlink is resolved first (``os.path.realpath``), on an object store the key
is taken as written, whole segments only. The key must then be a folder no one else
owns: not the server's own storage, not inside a data folder of ``tables/`` (a branch
tree, data files), not inside another database's root, and neither inside, around nor
the same as another live table's folder. A drop deletes the one folder its entry owns
(`Catalog.owns_data`); a deregister deletes nothing.

The checks read the catalog (one listing per namespace), not the data: only a local
root's candidate folder is walked, for symlinks out of it.
"""

from __future__ import annotations

import os
import urllib.parse

from nsframe.exceptions import InvalidInputError, TableAlreadyExistsError
from nsframe.server._storage.catalog import (
    CATALOG,
    TABLES,
    Catalog,
    entry_key,
    inside_data_folder,
)
from nsframe.server._storage.location import DDB_TABLE, STORE_FAMILY, relation
from nsframe.server._storage.names import check_name

# A path longer than a local path can be (PATH_MAX) is no location.
MAX_LOCATION_BYTES = 4096
# S3's limit on a key is 1024 bytes, and the dataset's own files go below the folder.
MAX_KEY_BYTES = 900
# What marks a folder as a database root: the catalog and the servers' own records.
ROOT_MARKERS = (CATALOG.rstrip("/"), "_nsframe")
RESERVED = (*ROOT_MARKERS, TABLES.rstrip("/"))


def location_key(catalog: Catalog, location: str) -> str:
    """The key under the root of the dataset folder ``location`` names: a path relative
    to the root, or an absolute path or URI inside it. 400 for anything else."""
    text = location.strip()
    if not text:
        raise InvalidInputError("The member 'location' is empty: give the dataset's path.")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_LOCATION_BYTES:
        raise InvalidInputError(
            f"The location is {size} bytes long: the limit is {MAX_LOCATION_BYTES}. Give "
            "the dataset's path relative to the storage root."
        )
    key = _local_key(catalog, text) if catalog.objects.is_local else _store_key(catalog, text)
    _check_key(key)
    found = _holds_dataset(catalog, key)
    if not found and _is_bare_name(text) and _holds_dataset(catalog, TABLES + key):
        # The reference server keeps its tables at its root, so Lance's clients name one
        # by the last segment of its location; ours sit under tables/.
        key, found = TABLES + key, True
    if not found:
        raise InvalidInputError(
            "There is no Lance dataset at that location: register the folder that holds "
            "its _versions directory."
        )
    _check_not_in_another_root(catalog, key)
    if catalog.objects.is_local:
        _check_self_contained(catalog.root, key)
    return key


def _holds_dataset(catalog: Catalog, key: str) -> bool:
    try:
        return catalog.holds_dataset(key)
    except (ValueError, OSError) as exc:  # a segment the store cannot hold
        raise InvalidInputError(
            "The location is not a path the storage can hold: give the dataset's path."
        ) from exc


def _is_bare_name(text: str) -> bool:
    """A relative location of one segment, as ``<uid>.lance``."""
    return "/" not in text and "\\" not in text and ":" not in text and text not in (".", "..")


def _outside() -> InvalidInputError:
    return InvalidInputError(
        "The location is not inside this server's storage root (symlinks are followed): "
        "register a dataset stored under the root (a path relative to it works too)."
    )


def _local_key(catalog: Catalog, text: str) -> str:
    """The key of a local path, every symlink in it resolved."""
    parsed = urllib.parse.urlparse(text)
    path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else text
    root = os.path.realpath(catalog.root)
    try:
        real = os.path.realpath(os.path.join(root, path))  # join keeps an absolute path
        key = os.path.relpath(real, root).replace(os.sep, "/")
    except (ValueError, OSError) as exc:  # a NUL byte, another drive
        raise InvalidInputError(
            "The location is not a path the storage can hold: give the dataset's path."
        ) from exc
    if key == ".." or key.startswith("../"):
        raise _outside()
    return "" if key == "." else stored_case(root, key)


def stored_case(root: str, key: str) -> str:
    """``key`` with each segment spelled as its folder lists it. On a case-insensitive
    file system (macOS, Windows) TABLES/ opens tables/, and realpath keeps the case it
    was given: the checks must compare the names as stored."""
    if not os.path.isdir(os.path.join(root, "_NSFRAME")):
        return key  # a case-sensitive file system: the name given is the name stored
    folder, spelled = root, []
    for part in key.split("/"):
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        if part not in names:
            part = next((n for n in names if n.casefold() == part.casefold()), part)
        spelled.append(part)
        folder = os.path.join(folder, part)
    return "/".join(spelled)


def _store_key(catalog: Catalog, text: str) -> str:
    """The key of a location on an object store: as written, whole segments only."""
    root = catalog.location
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme:
        # describe's own location on an s3+ddb:// root carries the root's commit table.
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        if parsed.fragment or query not in ({}, {DDB_TABLE: [root.ddb_table]}):
            raise InvalidInputError(
                "The location may not carry a query or a fragment: give the dataset's path."
            )
        if STORE_FAMILY.get(parsed.scheme.lower()) != STORE_FAMILY.get(root.scheme):
            raise _outside()
        full = f"{root.scheme}://{parsed.netloc}{parsed.path}"
    else:
        full = f"{root.base}/{text.lstrip('/')}"
    if full.rstrip("/") == root.base:
        return ""
    if not full.startswith(root.base + "/"):
        raise _outside()
    key = full[len(root.base) + 1:]
    if "%" in key:
        # Lance reads a location as a URL, in which %2F is a slash: the folder it opened
        # would not be the one these checks looked at.
        raise InvalidInputError(
            "The location contains '%': on an object store it is read as a URL escape. "
            "Give the dataset's key as it is stored, without escapes."
        )
    return key.rstrip("/")


def _check_key(key: str) -> None:
    """Refuse the root itself, the server's own folders, and names no store holds."""
    if key == "":
        raise InvalidInputError(
            "The location is the storage root itself: register a dataset's folder inside it."
        )
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise InvalidInputError(
            f"The location is {size} bytes long below the storage root: the limit is "
            f"{MAX_KEY_BYTES}, so that the dataset's own files fit an object store's keys."
        )
    segments = key.split("/")
    for part in segments:
        # Object stores refuse some names as path segments (control characters, names
        # with leading or trailing blanks, empty or dot segments): no dataset is there.
        check_name(part, "location segment")
        if part != part.strip():
            raise InvalidInputError(
                "A segment of the location starts or ends with a blank: no dataset can be "
                "stored there; give the dataset's path as it is."
            )
    if segments[0] in ROOT_MARKERS:
        raise InvalidInputError("The location is the server's own storage, not a dataset.")
    if inside_data_folder(key):
        raise InvalidInputError(
            "The location is inside the folder of one of the server's tables (its data, or "
            "a branch in tree/), or is tables/ itself: each folder in tables/ belongs to one "
            "table whole. Register the table's own folder, or branch the table instead."
        )


def _check_not_in_another_root(catalog: Catalog, key: str) -> None:
    """Refuse a folder of (or that is) another database's root: one that holds the
    catalog or the server records of a database, below this root."""
    segments = key.split("/")
    for depth in range(1, len(segments) + 1):
        folder = "/".join(segments[:depth])
        if any(_holds(catalog, f"{folder}/{marker}") for marker in ROOT_MARKERS):
            raise InvalidInputError(
                "The location is in the storage root of another database (a folder on its "
                "path holds _catalog/ or _nsframe/): register it on the server of that "
                "database."
            )


def _holds(catalog: Catalog, folder: str) -> bool:
    if catalog.objects.is_local:
        return os.path.isdir(os.path.join(catalog.root, folder))
    return next(iter(catalog.objects.walk(f"{folder}/")), None) is not None


def _check_self_contained(root: str, key: str) -> None:
    """Refuse a local dataset with a symlink in it, or with a database root in it: its
    files must all be its own, inside its folder."""
    pending = [os.path.join(root, key)]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_symlink():
                    raise InvalidInputError(
                        "The dataset at that location holds a symbolic link: register a "
                        "folder whose files are all inside it."
                    )
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in ROOT_MARKERS:
                        raise InvalidInputError(
                            "The dataset at that location holds another database's "
                            "storage root (_catalog/ or _nsframe/): register a folder "
                            "that holds one dataset."
                        )
                    pending.append(entry.path)


def check_free(catalog: Catalog, key: str, *, besides: str,
               kept: set[str] | None = None) -> None:
    """409 unless folder ``key`` is free: no live table's folder (other than the entry
    at catalog folder ``besides``, which a register replaces) is, holds or lies inside
    it, and it neither holds nor lies inside a deregistered table's kept folder.

    The detail names no table: the caller may not be allowed to see it."""
    _, live = catalog.reachable(fresh=True)
    for entry in live:
        other = entry_key(entry)
        if entry.folder == besides or other is None:
            continue
        how = relation(key, other)
        if how == "same":
            raise TableAlreadyExistsError(
                "That dataset is already another table's folder: one folder has one "
                "table (rename that table instead)."
            )
        if how is not None:
            raise _overlaps(how, "another table's folder")
    for other in kept or ():
        how = relation(key, other)
        if how not in (None, "same"):
            raise _overlaps(how, "the kept folder of a deregistered table")


def _overlaps(how: str, what: str) -> TableAlreadyExistsError:
    where = "lies inside" if how == "inside" else "holds"
    return TableAlreadyExistsError(
        f"That folder {where} {what}: no two tables may own overlapping folders, since "
        "dropping one would delete the other's data. Register a folder of its own."
    )
