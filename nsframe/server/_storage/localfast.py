"""Reads of a local root without obstore: the catalog's hot path.

Every request resolves its table through the catalog (two listings and two reads of
small JSON files). obstore's local store costs about 100 µs a read and 20 µs a listing
here, against 10 µs for `open` and `os.scandir`; that was 0.2-0.25 ms of each request.
Only reads and listings of folders come here. Every write, and everything on an object
store, still goes through obstore, so the rules of docs/storage.md (conditional writes,
no rename, no locks) are untouched: a reader sees exactly the files obstore wrote.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

# obstore stages a local upload as `<name>#<n>` before moving it into place; its listing
# hides such names, and so does this one.
_STAGING = re.compile(r"#\d+$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def safe_key(key: str) -> bool:
    """Whether ``key`` is a plain relative key this module may join to the root (anything
    else goes to obstore, which refuses or normalises it as it always has)."""
    return bool(key) and not key.startswith("/") and "\\" not in key \
        and "\x00" not in key and all(p not in ("", ".", "..") for p in key.split("/"))


def read(root: str, key: str) -> bytes | None:
    """The bytes at ``key``, or None if there is no such file."""
    try:
        with open(os.path.join(root, key), "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


# How long after a folder's last change its modification time may be trusted to change
# again with the next one: above the timestamp grain of any local file system (ext4 and
# tmpfs stamp with the kernel's coarse clock, a few ms; some network file systems 1 s).
STAMP_GRAIN_NS = 3_000_000_000


class FolderNames:
    """`file_names` of catalog folders, listed again only when a folder has changed.

    A file created or deleted in a folder changes the folder's modification time, so a
    ``stat`` (about 1 µs) says whether a listing still holds. A stamp is trusted only once
    it is `STAMP_GRAIN_NS` older than the listing it was taken with: a change within the
    file system's timestamp grain of the one before could leave it as it was. Every
    request still sees every change made before it started, as a fresh listing would.
    """

    def __init__(self, root: str, on_list: Callable[[], object], size: int = 4096) -> None:
        self.root = root
        self._on_list = on_list  # told of each listing (the store's request counter)
        self._size = size
        # folder -> (its modification time, the names it held then)
        self._known: dict[str, tuple[int, list[str]]] = {}

    def __call__(self, folder: str) -> list[str]:
        now = time.time_ns()  # before the stat: a change after it is not missed
        try:
            stamp = os.stat(os.path.join(self.root, folder)).st_mtime_ns
        except (FileNotFoundError, NotADirectoryError):
            self._known.pop(folder, None)
            return []
        known = self._known.get(folder)
        if known is not None and known[0] == stamp:
            return known[1]
        self._on_list()
        names = file_names(self.root, folder)
        if stamp < now - STAMP_GRAIN_NS:
            if len(self._known) >= self._size:
                self._known.clear()  # a bound, not a policy: relisting is always right
            self._known[folder] = (stamp, names)
        return names


def file_names(root: str, folder: str) -> list[str]:
    """The names of the files directly in ``folder`` (which ends with a slash): one
    ``scandir``, with no ``stat`` of each file (a catalog lookup needs only the names)."""
    try:
        with os.scandir(os.path.join(root, folder)) as entries:
            return [e.name for e in entries if not e.is_dir(follow_symlinks=False)
                    and ("#" not in e.name or not _STAGING.search(e.name))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def walk(root: str, prefix: str) -> Iterator[tuple[str, int, datetime]]:
    """(key, size, modification time) of every file below the folder ``prefix`` (which
    ends with a slash), in no particular order; nothing for a folder that does not exist."""
    stack = [prefix]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, folder)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(f"{folder}{entry.name}/")
            elif "#" not in entry.name or not _STAGING.search(entry.name):
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # deleted since the listing: not there
                    continue
                # Whole microseconds, as obstore reports them.
                modified = _EPOCH + timedelta(microseconds=info.st_mtime_ns // 1000)
                yield f"{folder}{entry.name}", info.st_size, modified
