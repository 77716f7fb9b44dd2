"""Every notebook, run with "Run All" in a real JupyterLab at 1280 px, as a newcomer would;
then the widget of notebook 04 clicked afterwards: a version, a tag, a filtered search.

After "Run All" the notebooks must still be alive (their clean-up happens at kernel
shutdown), the widget must show rows for a filtered search, and no label, button or list
entry of the widget may be cut off. Screenshots of each notebook are saved in the test's
temporary folder (and in ``$NSFRAME_UI_SCREENSHOTS`` when set).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect, sync_playwright

from tests.support.lab import CHROMIUM_ARGS, CUT_OFF_JS, Lab, copy_notebooks, running_lab
from tests.ui.test_browser_jupyterlab import run_all_cells

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WIDTH, HEIGHT = 1280, 900
TIMEOUT_MS = 120_000
# Notebook 04 last: its widget is clicked once every notebook has run.
ORDER = ["01_quickstart.ipynb", "02_search.ipynb", "03_versions_tags_branches.ipynb",
         "05_teaching_demo.ipynb", "04_browser.ipynb"]
pytestmark = [pytest.mark.ui, pytest.mark.timeout(900)]


@pytest.fixture
def notebooks_lab(tmp_path: Path) -> Iterator[tuple[Lab, dict[str, int]]]:
    with running_lab(tmp_path, {}) as lab:
        yield lab, copy_notebooks(NOTEBOOKS, lab.root)


def _shoot(page: Page, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot))
    keep = os.environ.get("NSFRAME_UI_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def _nothing_cut_off(widget: Locator) -> None:
    cut = widget.evaluate(CUT_OFF_JS)
    assert cut == [], f"cut off at {WIDTH} px: {cut}"


def _click_the_widget(page: Page, tmp_path: Path) -> None:
    """A person's clicks on the first browser of notebook 04, after "Run All"."""
    browser = page.locator(".nsframe-browser").first
    browser.scroll_into_view_if_needed()
    expect(browser).to_be_visible()
    preview = browser.locator(".nsframe-preview")
    expect(preview).to_contain_text("version 3")

    versions = browser.locator(".nsframe-versions select")
    versions.locator("option", has_text=re.compile(r"^v2\b")).click()
    expect(preview).to_contain_text("version 2")

    browser.locator(".nsframe-tags select option", has_text=re.compile(r"^raw\b")).click()
    expect(browser.locator(".nsframe-breadcrumb")).to_contain_text("tag raw")
    expect(preview).to_contain_text("of 3000 rows")

    browser.get_by_text("Search", exact=True).first.click()  # the accordion's title
    search = browser.locator(".nsframe-search")
    expect(search).to_be_visible()
    search.locator("input[placeholder^='words to find']").fill("telescope")
    search.locator("input[placeholder^='SQL filter']").fill("rating >= 4.5")
    search.locator("button", has_text=re.compile(r"^\s*Search\s*$")).click()
    expect(preview).to_contain_text(
        re.compile(r"search: [1-9]\d* matching 'telescope' where rating >= 4\.5"))
    expect(browser.locator(".nsframe-message")).to_contain_text("Search found")
    expect(browser.locator(".nsframe-error")).to_have_count(0)

    browser.scroll_into_view_if_needed()
    _nothing_cut_off(browser)
    # The other search mode shows other fields: they must fit too.
    search.get_by_text("vector of row #", exact=True).click()
    expect(search.get_by_label("vector column")).to_be_visible()
    _nothing_cut_off(browser)
    _shoot(page, tmp_path, "04_browser-clicked")
    # And the check sees a cut when there is one: a timeline squeezed to 200 px.
    browser.locator(".nsframe-versions select").evaluate(
        "s => { s.style.flex = '0 0 200px'; s.style.width = '200px'; }")
    assert any(entry.startswith("option 'v") for entry in browser.evaluate(CUT_OFF_JS))


def test_every_notebook_runs_all_and_its_widget_works_after(
        chromium: Path, notebooks_lab: tuple[Lab, dict[str, int]], tmp_path: Path) -> None:
    lab, cells = notebooks_lab
    assert sorted(cells) == sorted(ORDER)
    home = tmp_path / "chromium-home"
    home.mkdir()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(chromium), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": WIDTH, "height": HEIGHT},
            env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
                 "XDG_CACHE_HOME": str(home / "cache")},
        )
        try:
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            for name in ORDER:
                lab.start_kernel(name)
                # A workspace of its own: only this notebook open, as after a double click.
                stem = name.removesuffix(".ipynb")
                page.goto(lab.notebook_url(name, workspace=stem.replace("_", "-")),
                          wait_until="domcontentloaded")
                # (At 1280 px the toolbar also keeps a copy of the indicator in its popup.)
                expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
                       .first).to_be_attached(timeout=TIMEOUT_MS)
                run_all_cells(page, name, cells[name])
                _shoot(page, tmp_path, stem)
                if name == "04_browser.ipynb":
                    for widget in page.locator(".nsframe-browser").all():
                        widget.scroll_into_view_if_needed()
                        _nothing_cut_off(widget)
                    _click_the_widget(page, tmp_path)
        except Exception:
            for open_page in context.pages:
                open_page.screenshot(path=str(tmp_path / "failure.png"))
            print("JupyterLab log, last lines:\n", lab.log.read_text()[-6000:])
            print("screenshots in", tmp_path)
            raise
        finally:
            context.close()
