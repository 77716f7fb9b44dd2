"""`make demo` runs `nsframe demo`: it must keep working and print its frames."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_demo_prints_its_frames(tmp_path: Path) -> None:
    # It takes about a second; giving up before pytest-timeout (120 s) kills the child with it.
    result = subprocess.run(
        [sys.executable, "-m", "nsframe._cli", "demo", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=90, check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "df.ns.to_table: 3000 sample texts in 'demo$texts' (version 1)" in out

    def rows(heading: str) -> list[str]:
        block = out.split(f"== {heading}")[1].split("\n==")[0]
        return block.strip().splitlines()[2:]  # past the heading's line and the header

    # A person can check each hit at a glance: the query's words are in every title.
    telescope = rows("Full-text search for 'telescope'")
    assert len(telescope) == 5 and all("telescope" in row.lower() for row in telescope)
    # The vector search finds the probe itself first, at distance 0.
    nearest = rows("Vector search")
    assert "banana bread" in nearest[0].lower() and nearest[0].rstrip().endswith(" 0.0")
    # Filtered first (LanceDB's default): five hits, every one rated 4.5 or more.
    rated = rows("Filtered search")
    assert len(rated) == 5
    # Hybrid: the rows the words found (a _score) have them in their title.
    hybrid = rows("Hybrid search")
    found_by_words = [row for row in hybrid if "<NA>" not in row.split()[-2]]
    assert len(found_by_words) >= 3
    assert all("banana bread" in row.lower() for row in found_by_words), hybrid
    assert "version 4 has 2250 rows; tag 'clean' still has 3000" in out
    restored = out.split("== Restored tag 'clean'")[1]
    assert restored.count(" 375") == 8  # every category back, 375 rows each
    assert "Traceback" not in result.stderr
