"""What a storage root holds, read the same way on a local folder and on an object store.

The server tests run on a local root and again on an ``s3://`` root (``--root-kind``);
the few that look at the stored files do it through a `StoreView`, so they check the
same thing on both.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import obstore
from obstore.store import LocalStore, ObjectStore, from_url


@dataclass
class StoreView:
    """The root a server was started on (``root``: a folder or a URI) and its options."""

    root: str
    options: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def is_local(self) -> bool:
        return "://" not in self.root

    def _store(self, uri: str) -> ObjectStore:
        if self.is_local:
            return LocalStore(uri)
        config = {k: v for k, v in self.options.items() if k.startswith("aws_")}
        client = {"allow_http": self.options.get("allow_http") == "true"}
        return from_url(uri.split("?", 1)[0], config=config,  # type: ignore[call-overload,no-any-return]
                        client_options=client)

    def _keys(self, uri: str, prefix: str = "") -> list[str]:
        if self.is_local and not Path(uri).is_dir():
            return []
        return [meta["path"] for page in obstore.list(self._store(uri), prefix or None)
                for meta in page]

    def all_keys(self) -> set[str]:
        """Every object below the root, relative to it."""
        return set(self._keys(self.root))

    def children(self, prefix: str = "") -> set[str]:
        """The names directly below ``prefix`` of the root."""
        if self.is_local:
            folder = Path(self.root, prefix)
            return {p.name for p in folder.iterdir()} if folder.is_dir() else set()
        found = obstore.list_with_delimiter(self._store(self.root), prefix or None)
        return {p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]} | \
            {o["path"].rsplit("/", 1)[-1] for o in found["objects"]}

    def neighbours(self) -> set[str]:
        """What sits next to the root: the entries of its parent folder, or the top-level
        prefixes of its bucket."""
        if self.is_local:
            return {p.name for p in Path(self.root).parent.iterdir()}
        bucket = urllib.parse.urlsplit(self.root).netloc
        return StoreView(f"s3://{bucket}", self.options).children()

    def escaped(self) -> list[str]:
        """Objects that resolve outside the root (symlinks, dot segments)."""
        if self.is_local:
            base = str(Path(self.root).resolve()) + os.sep
            return [str(p) for p in Path(self.root).rglob("*")
                    if not os.path.realpath(p).startswith(base)]
        return [k for k in self.all_keys() if {".", ".."} & set(k.split("/"))]

    def data_folders(self) -> set[str]:
        """The table data folders (docs/storage.md)."""
        return self.children("tables")

    def exists(self, location: str) -> bool:
        """Whether anything is stored at a table's ``location`` (describe's)."""
        return bool(self._keys(location))

    def sizes(self, location: str, sub: str) -> dict[str, int]:
        """The objects below ``sub`` of ``location``, by name, with their sizes."""
        if self.is_local:
            folder = Path(location, sub)
            return {p.name: p.stat().st_size for p in folder.iterdir()} if folder.is_dir() else {}
        return {meta["path"].rsplit("/", 1)[-1]: meta["size"]
                for page in obstore.list(self._store(location), sub.strip("/"))
                for meta in page}

    def dataset(self, location: str, **kwargs: Any) -> lance.LanceDataset:
        """The Lance dataset at ``location``, opened directly (not through the server)."""
        return lance.dataset(location, storage_options=self.options or None, **kwargs)

    def lance_options(self) -> dict[str, str] | None:
        return self.options or None
