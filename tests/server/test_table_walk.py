"""Listing every table walks the catalog once: two listings per namespace (its tables,
its children), each namespace found from its parent's listing, never resolved again
from the root (which cost six listings per one-level namespace, and thousands per page
on an S3 root of hundreds of namespaces)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nsframe.server._storage.catalog import Catalog


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    opened = Catalog(tmp_path / "root")
    yield opened
    opened.close()


def _counting(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    listed: list[str] = []
    objects = catalog.objects
    walk, names = objects.walk, objects.file_names

    def counted_walk(prefix: str) -> Any:
        listed.append(prefix)
        return walk(prefix)

    def counted_names(prefix: str) -> list[str]:
        listed.append(prefix)
        return names(prefix)

    monkeypatch.setattr(objects, "walk", counted_walk)
    monkeypatch.setattr(objects, "file_names", counted_names)
    return listed


def test_every_table_is_found_with_two_listings_per_namespace(
        catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    namespaces = [["a"], ["a", "b"], ["a", "b", "c"], ["d"], ["d", "e"]]
    for parts in namespaces:
        catalog.create_namespace(parts, "Create", None)
    tables = [["top"], ["a", "t1"], ["a", "b", "c", "deep"], ["d", "e", "t2"], ["d", "e", "t3"]]
    for parts in tables:
        catalog.declare_table(parts, None)
    listed = _counting(catalog, monkeypatch)
    found = catalog.walk_tables([])
    assert sorted(found) == sorted(tables)
    # The root and each namespace: its tables and its children.
    assert len(listed) == 2 * (len(namespaces) + 1), listed
    # Below a namespace, the walk starts there.
    listed.clear()
    assert sorted(catalog.walk_tables(["d"])) == [["d", "e", "t2"], ["d", "e", "t3"]]
    assert len(listed) <= 1 + 2 * 2  # finding `d`, then `d` and `d$e`
