"""nbval settings for the notebooks (run by `make notebooks`, part of `make test`).

Widget views carry random model ids, and a figure's pixels differ between machines, so those
mime types are not compared; the cells' text and HTML outputs still are.
"""

from __future__ import annotations

from typing import Any

import pytest

SKIPPED_MIME_TYPES = (
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
    "image/png",
    "image/svg+xml",
)


def pytest_collectstart(collector: Any) -> None:
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += SKIPPED_MIME_TYPES


def pytest_runtest_setup(item: Any) -> None:
    # nbval silently skips the comparison for a cell saved without running, so a notebook
    # committed without its outputs would pass. The outputs are the documentation: demand them.
    cell = getattr(item, "cell", None)
    if cell is not None and cell.get("cell_type") == "code" and cell.get("source", "").strip() \
            and cell.get("execution_count") is None:
        pytest.fail(
            "This cell was saved without running, so its output is neither shown nor checked: "
            "run `make notebooks-run` and commit the notebook with its outputs.",
            pytrace=False,
        )
