"""Storage: namespaces as directories, tables as Lance datasets, and the dataset cache.

Layout under the root (every name is checked by `_ids.check_name` first)::

    <root>/namespace.json                 properties of the root namespace
    <root>/namespaces/<a>/namespace.json  properties of namespace a
    <root>/namespaces/<a>/tables/<t>.lance      table a$t, a Lance dataset
    <root>/namespaces/<a>/tables/<t>.declared   properties of table a$t; alone, a
                                                declared-only table (JSON)
    <root>/.trash/                        dropped tables, while they are deleted

Child namespaces and tables live in separate folders, so no user name can collide
with another object or with our own files.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.parse
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
from lance.dataset import LanceDataset

from nsframe.exceptions import (
    BranchNotFoundError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
    VersionNotFoundError,
)
from nsframe.server._http.ids import format_id

PROPERTIES_FILE = "namespace.json"
NAMESPACES_DIR = "namespaces"
TABLES_DIR = "tables"
TABLE_SUFFIX = ".lance"
DECLARED_SUFFIX = ".declared"
TRASH_DIR = ".trash"
MAIN_BRANCH = "main"
# Linux allows 4096 bytes per path; Lance adds up to about 200 below a table directory
# (`_versions/...manifest`, `_indices/<uuid>/...`), so leave it room.
MAX_PATH_BYTES = 3600


def root_path_from_uri(root: str | os.PathLike[str]) -> Path:
    """A local root from a path or a ``file://`` URI; object stores are not supported yet."""
    text = os.fspath(root)
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = Path(urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else text)
        return path.expanduser().resolve()
    raise ValueError(f"Storage root {text!r}: only local paths and file:// URIs are supported.")


@dataclass(frozen=True)
class TableRef:
    """A table's identifier and where it lives."""

    id: list[str]
    path: Path

    @property
    def name(self) -> str:
        return self.id[-1]

    @property
    def uri(self) -> str:
        return str(self.path)

    @property
    def declared_marker(self) -> Path:
        return self.path.with_name(self.name + DECLARED_SUFFIX)

    def label(self, delimiter: str = "$") -> str:
        return format_id(self.id, delimiter)


def normalize_branch(branch: str | None) -> str | None:
    """None for the main branch (``None``, ``""`` and ``"main"`` all mean main)."""
    if branch is None or branch == "" or branch == MAIN_BRANCH:
        return None
    return branch


class Catalog:
    """Namespaces and tables under one storage root, with a cache of opened datasets."""

    def __init__(self, root: str | os.PathLike[str], *, cache_size: int = 128) -> None:
        self.root = root_path_from_uri(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.session = lance.Session()  # type: ignore[attr-defined]
        self._cache: OrderedDict[tuple[str, str | None], LanceDataset] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()
        # Serialises namespace/table creation and drops; data writes are left to Lance's
        # own optimistic concurrency.
        self.ddl_lock = threading.RLock()
        self._creation_locks: dict[str, threading.RLock] = {}

    # ----------------------------------------------------------------- namespaces
    def namespace_dir(self, parts: list[str]) -> Path:
        path = self.root
        for part in parts:
            path = path / NAMESPACES_DIR / part
        return _short_enough(path, parts)

    def namespace_exists(self, parts: list[str]) -> bool:
        return not parts or (self.namespace_dir(parts) / PROPERTIES_FILE).is_file()

    def require_namespace(self, parts: list[str], *, status: int | None = None) -> Path:
        if not self.namespace_exists(parts):
            raise NamespaceNotFoundError(
                f"Namespace {format_id(parts)!r} does not exist: create it first.",
                status=status,
            )
        return self.namespace_dir(parts)

    def namespace_properties(self, parts: list[str]) -> dict[str, str]:
        path = self.require_namespace(parts) / PROPERTIES_FILE
        if not path.is_file():
            return {}
        props: dict[str, str] = json.loads(path.read_text("utf-8")).get("properties") or {}
        return props

    def create_namespace(
        self, parts: list[str], mode: str, properties: dict[str, str] | None
    ) -> dict[str, str]:
        if not parts:
            if mode == "Create":
                raise NamespaceAlreadyExistsError("The root namespace always exists.")
            return self.namespace_properties(parts)
        with self.ddl_lock:
            self.require_namespace(parts[:-1])
            exists = self.namespace_exists(parts)
            if exists and mode == "Create":
                raise NamespaceAlreadyExistsError(
                    f"Namespace {format_id(parts)!r} already exists: use mode ExistOk to reuse it "
                    "or Overwrite to replace its properties."
                )
            if exists and mode == "ExistOk":
                return self.namespace_properties(parts)
            directory = self.namespace_dir(parts)
            directory.mkdir(parents=True, exist_ok=True)
            _write_json_atomic(directory / PROPERTIES_FILE, {"properties": properties or {}})
            return dict(properties or {})

    def list_namespaces(self, parts: list[str]) -> list[str]:
        children = self.require_namespace(parts) / NAMESPACES_DIR
        if not children.is_dir():
            return []
        return sorted(
            entry.name for entry in children.iterdir() if (entry / PROPERTIES_FILE).is_file()
        )

    def drop_namespace(self, parts: list[str], behavior: str) -> dict[str, str]:
        if not parts:
            raise InvalidInputError("The root namespace cannot be dropped.")
        with self.ddl_lock:
            properties = self.namespace_properties(parts)
            children = self.list_namespaces(parts)
            tables = self.list_tables(parts, include_declared=True)
            if (children or tables) and behavior == "Restrict":
                raise NamespaceNotEmptyError(
                    f"Namespace {format_id(parts)!r} holds {len(tables)} table(s) and "
                    f"{len(children)} namespace(s): drop them first, or use behavior Cascade."
                )
            # Cascade: drop the contents first, deepest first, then the namespace itself.
            for child in children:
                self.drop_namespace([*parts, child], behavior)
            for table in tables:
                self.drop_table(self.table_ref([*parts, table]))
            directory = self.namespace_dir(parts)
            # The marker goes first, so a crash mid-way leaves no half-visible namespace.
            (directory / PROPERTIES_FILE).unlink(missing_ok=True)
            shutil.rmtree(directory, ignore_errors=True)
            return properties

    # --------------------------------------------------------------------- tables
    def table_ref(self, parts: list[str]) -> TableRef:
        if not parts:
            raise InvalidInputError("A table identifier needs at least one part: the table name.")
        ns_dir = self.namespace_dir(parts[:-1])
        path = _short_enough(ns_dir / TABLES_DIR / (parts[-1] + TABLE_SUFFIX), parts)
        return TableRef(parts, path)

    def table_state(self, ref: TableRef) -> str:
        """'created', 'declared' or 'missing'."""
        if (ref.path / "_versions").is_dir():
            return "created"
        if ref.declared_marker.is_file():
            return "declared"
        return "missing"

    def require_table(self, parts: list[str], *, allow_declared: bool = False) -> TableRef:
        self.require_namespace(parts[:-1])
        ref = self.table_ref(parts)
        state = self.table_state(ref)
        if state == "missing" or (state == "declared" and not allow_declared):
            hint = " (it is only declared: insert data to create it)" if state == "declared" else ""
            raise TableNotFoundError(f"Table {ref.label()!r} does not exist{hint}.")
        return ref

    def list_tables(self, ns_parts: list[str], *, include_declared: bool = True) -> list[str]:
        directory = self.require_namespace(ns_parts) / TABLES_DIR
        if not directory.is_dir():
            return []
        names: set[str] = set()
        for entry in directory.iterdir():
            if entry.name.endswith(TABLE_SUFFIX) and (entry / "_versions").is_dir():
                names.add(entry.name[: -len(TABLE_SUFFIX)])
            elif include_declared and entry.name.endswith(DECLARED_SUFFIX):
                names.add(entry.name[: -len(DECLARED_SUFFIX)])
        return sorted(names)

    def walk_tables(self, ns_parts: list[str]) -> list[list[str]]:
        """Every table below ``ns_parts``, as full identifiers."""
        found = [[*ns_parts, t] for t in self.list_tables(ns_parts)]
        for child in self.list_namespaces(ns_parts):
            found.extend(self.walk_tables([*ns_parts, child]))
        return found

    def creation_lock(self, ref: TableRef) -> threading.RLock:
        """The lock that makes "create if missing" atomic for one table.

        Lance's create mode is not exclusive: two concurrent creates both commit, the
        second as an overwrite of the first. Held for the whole write of a create, so
        creates of other tables and DDL are not blocked by a long upload.
        """
        with self._lock:
            return self._creation_locks.setdefault(ref.uri, threading.RLock())

    def declare_table(self, ref: TableRef, properties: dict[str, str] | None) -> None:
        """Write the table's properties file; alone (no dataset) it marks a declared table."""
        ref.path.parent.mkdir(parents=True, exist_ok=True)
        _write_json_atomic(ref.declared_marker, {"properties": properties or {}})

    def table_properties(self, ref: TableRef) -> dict[str, str]:
        if ref.declared_marker.is_file():
            props: dict[str, str] = (
                json.loads(ref.declared_marker.read_text("utf-8")).get("properties") or {}
            )
            return props
        return {}

    def drop_table(self, ref: TableRef) -> None:
        with self.ddl_lock:
            self.forget(ref)
            ref.declared_marker.unlink(missing_ok=True)
            if ref.path.exists():
                # Move it out of the namespace first, so that a half-deleted dataset is
                # never visible, under its name or any other, to a concurrent listing.
                trash = self.root / TRASH_DIR
                trash.mkdir(exist_ok=True)
                doomed = trash / f"{os.getpid()}-{uuid.uuid4().hex}"
                ref.path.rename(doomed)
                shutil.rmtree(doomed, ignore_errors=True)

    # ------------------------------------------------------------------- datasets
    def dataset(
        self, ref: TableRef, *, branch: str | None = None, version: int | None = None
    ) -> LanceDataset:
        """The table at the latest version of ``branch`` (or at ``version`` of it)."""
        branch = normalize_branch(branch)
        ds = self._latest(ref, branch)
        if version is None or version == ds.version:
            return ds
        try:
            return ds.checkout_version(version)
        except (OSError, ValueError) as exc:
            where = f" on branch {branch!r}" if branch else ""
            raise VersionNotFoundError(
                f"Table {ref.label()!r} has no version {version}{where}: list versions to "
                "see which exist."
            ) from exc

    def _latest(self, ref: TableRef, branch: str | None) -> LanceDataset:
        key = (ref.uri, branch)
        with self._lock:
            ds = self._cache.get(key)
        if ds is None:
            ds = self._open(ref, branch)
        else:
            latest = ds.latest_version
            if latest != ds.version:
                ds = ds.checkout_version(latest)
        self.remember(ref, branch, ds)
        return ds

    def _open(self, ref: TableRef, branch: str | None) -> LanceDataset:
        if self.table_state(ref) != "created":
            raise TableNotFoundError(f"Table {ref.label()!r} does not exist.")
        ds = lance.dataset(ref.uri, session=self.session)
        if branch is None:
            return ds
        if branch not in ds.branches.list():
            raise BranchNotFoundError(
                f"Table {ref.label()!r} has no branch {branch!r}: create it first."
            )
        return ds.checkout_version((branch, None))

    def open_fresh(self, ref: TableRef, branch: str | None = None) -> LanceDataset:
        """A new dataset object at the latest version, for a write that mutates it."""
        return self._open(ref, normalize_branch(branch))

    def remember(self, ref: TableRef, branch: str | None, ds: LanceDataset) -> None:
        """Keep ``ds`` as the newest known state of ``ref`` on ``branch``."""
        key = (ref.uri, normalize_branch(branch))
        with self._lock:
            current = self._cache.get(key)
            if current is not None and current.version > ds.version:
                return
            self._cache[key] = ds
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def forget(
        self, ref: TableRef, branch: str | None = None, *, all_branches: bool = True
    ) -> None:
        with self._lock:
            for key in list(self._cache):
                if key[0] == ref.uri and (all_branches or key[1] == normalize_branch(branch)):
                    del self._cache[key]


def _short_enough(path: Path, parts: list[str]) -> Path:
    """``path`` if the file system can hold it and the files Lance puts below it."""
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise InvalidInputError(
            f"The identifier {format_id(parts)!r} nests too deep or its names are too long "
            f"for storage ({len(parts)} parts): use fewer levels or shorter names."
        )
    return path


def _write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(payload, sort_keys=True), "utf-8")
    os.replace(tmp, path)
