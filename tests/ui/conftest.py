"""Fixtures of the real-browser tests: a versioned table, JupyterLab, Debian's chromium.

Nothing here downloads a browser: `make test` installs Debian's ``chromium`` package
(the Makefile's ``chromium`` target) and Playwright only drives that executable.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import nsframe
from tests.support.lab import CHROMIUM, Lab, VersionedTable, running_lab, write_notebook


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make chromium` (apt-get install chromium).")
    return CHROMIUM


@pytest.fixture
def versioned_table(base_url: str) -> VersionedTable:
    with nsframe.connect(base_url) as conn:
        ns = f"ui{uuid.uuid4().hex[:10]}"
        conn.create_namespace(ns)
        table = conn.create_table(f"{ns}$items", {
            "id": [1, 2, 3],
            "name": ["alpha", "beta", "gamma"],
            "vector": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]],
        })
        first = table.version
        second = table.insert({"id": [4, 5], "name": ["delta", "epsilon"],
                               "vector": [[0.7, 0.8], [0.9, 1.0]]}).version
        third = table.delete("id = 1").version
        assert second is not None and third is not None
        table.create_tag("first", first)
        return VersionedTable(table.id, (first, second, third))


@pytest.fixture
def meaning_table(base_url: str) -> str:
    """The sample corpus with the packaged sentence-transformers function attached (its
    stored vectors are that model's, so nothing is embedded here); returns the table id."""
    from nsframe.datasets import load_sample
    from nsframe.embeddings import get_registry

    with nsframe.connect(base_url) as conn:
        ns = f"ui{uuid.uuid4().hex[:10]}"
        conn.create_namespace(ns)
        function = get_registry().get("sentence-transformers").create()
        return conn.create_table(f"{ns}$texts", load_sample(), embedding=function).id


def _browsing_lab(workdir: Path, base_url: str, table: str) -> Iterator[Lab]:
    with running_lab(workdir, {"NSFRAME_URL": base_url, "NSFRAME_TABLE": table}) as running:
        write_notebook(running.root / "browse.ipynb")
        running.start_kernel("browse.ipynb")
        yield running


@pytest.fixture
def lab(tmp_path: Path, base_url: str, versioned_table: VersionedTable) -> Iterator[Lab]:
    yield from _browsing_lab(tmp_path, base_url, versioned_table.id)


@pytest.fixture
def meaning_lab(tmp_path: Path, base_url: str, meaning_table: str) -> Iterator[Lab]:
    yield from _browsing_lab(tmp_path, base_url, meaning_table)
