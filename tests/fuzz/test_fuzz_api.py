"""`make test` fuzzes the service too: schemathesis for about 100 s, and never a 5xx.

`fuzz_api.py` does the work (a seeded server, schemathesis with the one check
``not_a_server_error``); `make fuzz` runs it longer. NSFRAME_FUZZ_SECONDS changes the
length of this run.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_api  # a script beside this test, not a package

SECONDS = int(os.environ.get("NSFRAME_FUZZ_SECONDS", "100"))

pytestmark = [pytest.mark.fuzz, pytest.mark.timeout(SECONDS + 240)]


def test_schemathesis_finds_no_server_error() -> None:
    spec = fuzz_api.find_spec()
    if spec is None:
        pytest.skip("no spec/upstream-openapi.yaml in the repository")
    assert shutil.which("schemathesis", path=str(Path(sys.executable).parent)), \
        "schemathesis is missing: pip install -e '.[test]'"
    assert fuzz_api.main(["--seconds", str(SECONDS), "--spec", str(spec)]) == 0
