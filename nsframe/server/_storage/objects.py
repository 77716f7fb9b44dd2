"""The storage root as an object store: the few operations the catalog needs.

Local directories and object stores (S3, GCS, Azure) are reached through one API, so the
catalog's rules are the same everywhere and never rely on rename, atomic directory
listings or file locks. The one primitive that makes writes safe between processes is
`put_if_absent`: of several writers of one key, exactly one succeeds (a hard link on a
local disk, a conditional PUT on an object store).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import obstore
from obstore.exceptions import AlreadyExistsError, PreconditionError
from obstore.store import LocalStore, ObjectStore, from_url

from nsframe.server._storage import localfast

LOCAL_SCHEMES = ("", "file")


@dataclass(frozen=True)
class StoredObject:
    key: str
    size: int
    modified: datetime


def split_root(root: str | os.PathLike[str]) -> tuple[str, str]:
    """``(scheme, where)`` of a root: an absolute local path for local roots, else the URI."""
    text = os.fspath(root)
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme in LOCAL_SCHEMES or (len(parsed.scheme) == 1 and os.name == "nt"):
        local = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else text
        return "", str(Path(local).expanduser().resolve())
    return parsed.scheme, text.rstrip("/")


class Objects:
    """Keys under one root, as bytes."""

    def __init__(self, root: str | os.PathLike[str],
                 options: Mapping[str, str] | None = None) -> None:
        self.scheme, self.root = split_root(root)
        self.options = dict(options or {})
        self.store: ObjectStore
        if self.is_local:
            Path(self.root).mkdir(parents=True, exist_ok=True)
            self.store = LocalStore(self.root)
        else:
            self.store = from_url(self.root, config=self.options)  # type: ignore[call-overload]

    @property
    def is_local(self) -> bool:
        return self.scheme == ""

    def uri(self, key: str) -> str:
        """Where ``key`` lives, as Lance opens it."""
        if self.is_local:
            return str(Path(self.root, key))
        return f"{self.root}/{key}"

    def get(self, key: str) -> bytes | None:
        if self.is_local and localfast.safe_key(key):
            return localfast.read(self.root, key)
        try:
            return bytes(obstore.get(self.store, key).bytes())
        except FileNotFoundError:
            return None

    def put(self, key: str, data: bytes) -> None:
        obstore.put(self.store, key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Write ``key`` unless it exists; True when this call wrote it."""
        try:
            obstore.put(self.store, key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        return True

    def walk(self, prefix: str) -> Iterator[StoredObject]:
        """Every object below ``prefix`` (a folder: give it a trailing slash)."""
        if self.is_local and prefix.endswith("/") and localfast.safe_key(prefix[:-1]):
            for key, size, modified in localfast.walk(self.root, prefix):
                yield StoredObject(key, size, modified)
            return
        for page in obstore.list(self.store, prefix):
            for meta in page:
                yield StoredObject(meta["path"], meta["size"], meta["last_modified"])

    def children(self, prefix: str) -> list[str]:
        """The names of the folders directly below ``prefix``."""
        found = obstore.list_with_delimiter(self.store, prefix)
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            with contextlib.suppress(FileNotFoundError):
                obstore.delete(self.store, key)

    def delete_folder(self, prefix: str) -> int:
        """Delete every object below ``prefix``; returns how many there were."""
        keys = [o.key for o in self.walk(prefix)]
        if self.is_local:
            shutil.rmtree(Path(self.root, prefix), ignore_errors=True)
        else:
            self.delete(keys)
        return len(keys)
