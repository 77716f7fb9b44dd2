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
    # The vector search finds the probe itself first, at distance 0.
    vector_block = out.split("== Vector search")[1].split("==")[0]
    assert "sourdough" in vector_block.lower()
    assert " 0.0" in vector_block.splitlines()[2]
    fts_rows = out.split("== Full-text search for 'telescope'")[1].split("==")[0]
    fts_rows = fts_rows.strip().splitlines()[1:]  # past the header
    assert len(fts_rows) == 5 and all("astronomy" in row for row in fts_rows), fts_rows
    assert "version 4 has 2250 rows; tag 'clean' still has 3000" in out
    restored = out.split("== Restored tag 'clean'")[1]
    assert restored.count(" 375") == 8  # every category back, 375 rows each
    assert "Traceback" not in result.stderr
