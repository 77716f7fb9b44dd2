"""docs/compatibility.md: every test a cell of its table names exists, so a renamed or
removed test cannot leave a claim behind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "compatibility.md"
# "`A` = `tests/client/test_changes.py`": the letters the table's cells use.
_FILE = re.compile(r"`([A-Z])` = `(tests/[\w/]+\.py)`")
_CELL = re.compile(r"`([A-Z])::(test_\w+)`")
_NAMED = re.compile(r"`(test_\w+\.py)::(test_\w+)`")


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_named_test_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    files = {letter: ROOT / path for letter, path in _FILE.findall(text)}
    cells = _CELL.findall(text)
    assert len(cells) > 50, "the table names a test in most cells"
    missing = [f"{letter}::{name}" for letter, name in cells
               if name not in defined_tests(files[letter])]
    for file, name in _NAMED.findall(text):
        found = list((ROOT / "tests").rglob(file))
        if not found or name not in defined_tests(found[0]):
            missing.append(f"{file}::{name}")
    assert not missing, f"docs/compatibility.md names tests that do not exist: {missing}"
