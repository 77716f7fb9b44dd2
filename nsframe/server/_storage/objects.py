"""The storage root as an object store: the few operations the catalog needs.

Local directories and object stores (S3, GCS, Azure) are reached through one API, so the
catalog's rules are the same everywhere and never rely on rename, atomic directory
listings or file locks. The one primitive that makes writes safe between processes is
`put_if_absent`: of several writers of one key, exactly one succeeds (a hard link on a
local disk, a conditional PUT on an object store, a DynamoDB conditional write on an
``s3+ddb://`` root).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import obstore
from obstore.exceptions import AlreadyExistsError, PreconditionError
from obstore.store import LocalStore, ObjectStore, from_url

from nsframe.server._storage import localfast
from nsframe.server._storage.ddb import DynamoClaims
from nsframe.server._storage.errors import full_store
from nsframe.server._storage.location import StorageRoot
from nsframe.server._storage.metrics import store_counters

PROBE = "_nsframe/probe/"
log = logging.getLogger("nsframe.server")


@dataclass(frozen=True)
class StoredObject:
    key: str
    size: int
    modified: datetime


class StoreCheckError(RuntimeError):
    """The store cannot keep concurrent writers apart: the server must not start on it."""


class Objects:
    """Keys under one root, as bytes."""

    def __init__(self, root: str | os.PathLike[str] | StorageRoot,
                 options: Mapping[str, Any] | None = None) -> None:
        self.location = root if isinstance(root, StorageRoot) else StorageRoot.parse(root, options)
        self.scheme = self.location.scheme
        self.root = self.location.uri
        self.options = dict(self.location.options)
        self.store: ObjectStore
        self.claims: DynamoClaims | None = None
        self._probe: ObjectStore | None = None
        # What nsframe sends this store, for /metrics (Lance's own requests are not seen).
        self.counts = store_counters(self.scheme or "file")
        if self.is_local:
            Path(self.root).mkdir(parents=True, exist_ok=True)
            self.store = LocalStore(self.root)
            self._folder_names = localfast.FolderNames(self.root, self.counts["list"].inc)
        else:
            config, client = self.location.obstore_options()
            self.store = from_url(self.location.store_url(), config=config,  # type: ignore[call-overload]
                                  client_options=client or None)
            if self.location.ddb_table:
                self.claims = DynamoClaims(self.location.ddb_table,
                                           self.location.store_url(), self.options)

    @property
    def is_local(self) -> bool:
        return self.location.is_local

    def uri(self, key: str) -> str:
        """Where ``key`` lives, as Lance opens it."""
        return self.location.key_uri(key)

    def get(self, key: str) -> bytes | None:
        self.counts["get"].inc()
        if self.is_local and localfast.safe_key(key):
            return localfast.read(self.root, key)
        try:
            return bytes(obstore.get(self.store, key).bytes())
        except FileNotFoundError:
            return None

    def ping(self, key: str, timeout: float) -> None:
        """One HEAD of ``key``; raises when the store does not answer (a missing key is
        an answer). On a client of its own that never retries and gives up after
        ``timeout`` seconds: the store's usual retries would hold a readiness check for
        minutes when the store is gone."""
        if self.is_local:
            with contextlib.suppress(FileNotFoundError):
                os.stat(Path(self.root, key))
            return
        if self._probe is None:
            config, client = self.location.obstore_options()
            wait = timedelta(seconds=timeout)
            client = {**client, "timeout": wait, "connect_timeout": wait}
            self._probe = from_url(self.location.store_url(), config=config,  # type: ignore[call-overload]
                                   client_options=client, retry_config={"max_retries": 0})
        with contextlib.suppress(FileNotFoundError):
            obstore.head(self._probe, key)

    def put(self, key: str, data: bytes) -> None:
        self.counts["put"].inc()
        with full_store():
            obstore.put(self.store, key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Write ``key`` unless it exists; True when this call wrote it."""
        if self.claims is not None:
            return self._claim(self.claims, key, data)
        return self._create(key, data)

    def _create(self, key: str, data: bytes) -> bool:
        """The store's own create-if-absent (``If-None-Match: *`` on S3)."""
        self.counts["create"].inc()
        try:
            with full_store():
                obstore.put(self.store, key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        return True

    def _claim(self, claims: DynamoClaims, key: str, data: bytes) -> bool:
        self.counts["claim"].inc()
        if claims.claim(key, data):
            self.put(key, data)
            return True
        if self.get(key) is None:
            # The winner has not written its object yet, or crashed before it did: write
            # it for the winner, so whoever lost re-reads a state that includes it.
            self.counts["claim"].inc()
            body = claims.body(key)
            if body is not None:
                self.put(key, body)
        return False

    def walk(self, prefix: str) -> Iterator[StoredObject]:
        """Every object below ``prefix`` (a folder: give it a trailing slash)."""
        list_request = self.counts["list"]
        if self.is_local and prefix.endswith("/") and localfast.safe_key(prefix[:-1]):
            list_request.inc()
            for key, size, modified in localfast.walk(self.root, prefix):
                yield StoredObject(key, size, modified)
            return
        for page in obstore.list(self.store, prefix):
            list_request.inc()  # each page is one request
            for meta in page:
                yield StoredObject(meta["path"], meta["size"], meta["last_modified"])

    def file_names(self, prefix: str) -> list[str]:
        """The names of the objects directly below the folder ``prefix`` (one listing)."""
        if self.is_local and prefix.endswith("/") and localfast.safe_key(prefix[:-1]):
            return list(self._folder_names(prefix))  # a stat, and a listing if it changed
        start = len(prefix)
        return [name for obj in self.walk(prefix) if "/" not in (name := obj.key[start:])]

    def children(self, prefix: str) -> list[str]:
        """The names of the folders directly below ``prefix``."""
        self.counts["list"].inc()
        found = obstore.list_with_delimiter(self.store, prefix)
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]

    def delete(self, keys: list[str]) -> None:
        if not keys:
            return
        if self.is_local:
            self.counts["delete"].inc(len(keys))
            for key in keys:
                Path(self.root, key).unlink(missing_ok=True)
            return
        # One bulk request per 1000 keys on S3; a missing key is not an error.
        self.counts["delete"].inc(-(-len(keys) // 1000))
        with contextlib.suppress(FileNotFoundError):
            obstore.delete(self.store, keys)

    def delete_claimed(self, keys: list[str]) -> None:
        """Delete objects made by `put_if_absent`, with their claims on an ``s3+ddb``
        root: a later `put_if_absent` of one of them can succeed again."""
        self.delete(keys)
        if self.claims is not None and keys:
            self.counts["claim"].inc(-(-len(keys) // 25))  # batch writes of 25 items
            self.claims.release(keys)

    def delete_folder(self, prefix: str) -> int:
        """Delete every object below ``prefix``; returns how many there were."""
        keys = [o.key for o in self.walk(prefix)]
        if self.is_local:
            shutil.rmtree(Path(self.root, prefix), ignore_errors=True)
        else:
            self.delete(keys)
        return len(keys)

    def check_conditional_create(self) -> None:
        """Raise `StoreCheckError` unless a second create of one key fails.

        The catalog's generations and Lance's manifests are both committed by
        create-if-absent: a store (or a proxy in front of it) that ignores
        ``If-None-Match`` would let two writers both "win" and lose a commit silently.
        An ``s3+ddb://`` root commits both through DynamoDB, so there the DynamoDB path is
        what must hold; the store's own is only warned about (Lance still creates tags
        and branches with it).
        """
        if self.claims is None:
            if self._second_create_fails(self._create):
                return
            raise StoreCheckError(
                f"The store at {self.root} accepted a second create of the same object: it "
                "ignores conditional writes (If-None-Match), or a proxy in front of it drops "
                "the header. Two writers could then both commit the same version and one "
                "commit would be lost without an error. Use a store that honours "
                "If-None-Match (AWS S3, MinIO, Cloudflare R2, Google Cloud Storage, Azure "
                "Blob Storage), remove the proxy, or use an "
                "s3+ddb://bucket/path?ddbTableName=TABLE root, whose commits go through a "
                "DynamoDB table. --skip-conditional-put-check starts anyway, unsafely."
            )
        if not self._second_create_fails(self.put_if_absent):
            raise StoreCheckError(
                f"The DynamoDB table {self.location.ddb_table!r} of {self.root} accepted a "
                "second conditional write of one item: check that it is a DynamoDB table "
                "(hash key base_uri, range key version) and that dynamodb_endpoint points at "
                "DynamoDB."
            )
        if not self._second_create_fails(self._create):
            log.warning(
                "The store at %s ignores If-None-Match. Commits and the catalog are safe "
                "(they go through DynamoDB), but two concurrent creates of the same tag or "
                "branch name may both succeed, the later one replacing the earlier.",
                self.root)

    def _second_create_fails(self, create: Callable[[str, bytes], bool]) -> bool:
        key = f"{PROBE}{uuid.uuid4().hex}"
        try:
            if not create(key, b"first"):
                raise StoreCheckError(f"Could not create a probe object under {self.root}.")
            return not create(key, b"second")
        finally:
            self.delete([key])
