"""What a storage root holds on disk, without assuming its layout.

Lance datasets are found by their ``_versions`` directory wherever they sit; leftovers
are judged by name (trash, temporary files), by bytes, and by data files that no
version of their dataset references.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import lance

# A path component that marks a leftover, whatever the layout: trash, temporary files.
LEFTOVER = re.compile(r"trash|tmp|temp|\.part$|staging", re.IGNORECASE)


def tree_bytes(root: Path) -> int:
    """The bytes of every file below ``root`` (files vanishing meanwhile are skipped)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue
    return total


def leftover_files(root: Path) -> list[str]:
    """Files below ``root`` with a trash or temporary component in their relative path."""
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            relative = Path(folder, name).relative_to(root)
            if any(LEFTOVER.search(part) for part in relative.parts):
                found.append(relative.as_posix())
    return sorted(found)


def datasets(root: Path) -> list[Path]:
    """Every Lance dataset below ``root``: a directory holding ``_versions``.

    A dataset's own subdirectories are not searched (its branches live there).
    """
    found: list[Path] = []
    for folder, dirs, _ in os.walk(root):
        if "_versions" in dirs:
            found.append(Path(folder))
            dirs.clear()
    return sorted(found)


def unreferenced_data_files(dataset: Path) -> list[str]:
    """Files in the dataset's ``data/`` that no version of it (main branch) references."""
    data_dir = dataset / "data"
    if not data_dir.is_dir():
        return []
    present = {p.name for p in data_dir.iterdir() if p.is_file()}
    referenced: set[str] = set()
    ds = lance.dataset(str(dataset))
    for info in ds.versions():
        snapshot = ds.checkout_version(int(info["version"]))
        for fragment in snapshot.get_fragments():
            referenced.update(Path(df.path).name for df in fragment.data_files())
    return sorted(present - referenced)


def data_file_bytes(dataset: Path) -> int:
    data_dir = dataset / "data"
    return tree_bytes(data_dir) if data_dir.is_dir() else 0
