"""The browser widget in a real JupyterLab, in headless chromium, clicked like a person would."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.support.lab import CHROMIUM_ARGS, CUT_OFF_JS, NOTEBOOK_CELLS, Lab, VersionedTable

TIMEOUT_MS = 120_000
RUN_ATTEMPTS = 5
# Starting JupyterLab and its kernel may take up to LAB_START_TIMEOUT each, and a lost run is
# tried again RUN_ATTEMPTS times: its own timeouts, which say what was awaited, come first.
pytestmark = [pytest.mark.ui, pytest.mark.timeout(600)]


def _fail_on_raised(errors: Locator) -> None:
    if errors.count():
        raise AssertionError("A cell raised:\n" + "\n".join(errors.all_inner_texts()))


def run_all_cells(page: Page, notebook: str, cells: int) -> None:
    """Run > Run All Cells, as a person would, until every cell has run.

    A person would also try again when JupyterLab loses the run: the menu item is enabled
    only once the notebook is the current widget, and a kernel connection that reconnects
    while cells are queued drops the queued ones (they go back to ``[ ]`` without error).
    A cell that raises is a failure, reported with its traceback.
    """
    finished = page.locator(".jp-CodeCell .jp-InputPrompt", has_text=re.compile(r"\[\d+\]"))
    # Errors render as stderr, like warnings do: only a traceback or "...Error: " counts.
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                          has_text=re.compile(r"Traceback \(most recent call last\)|\w+Error: "))
    for _ in range(RUN_ATTEMPTS):
        page.locator(".lm-TabBar-tab", has_text=notebook).first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        item = page.locator(".lm-Menu-item:not(.lm-mod-disabled)",
                            has_text=re.compile(r"^Run All Cells"))
        try:
            item.click(timeout=10_000)
            expect(finished).to_have_count(cells, timeout=60_000)
        except (AssertionError, PlaywrightTimeoutError):
            _fail_on_raised(errors)
            page.keyboard.press("Escape")
            continue
        _fail_on_raised(errors)
        return
    raise AssertionError(f"Run All Cells did not run all {cells} cells in {RUN_ATTEMPTS} tries")


@contextmanager
def browsing(chromium: Path, lab: Lab, tmp_path: Path) -> Iterator[Locator]:
    """The browser widget of the lab's notebook, after Run All, in headless chromium.

    On a failure, a screenshot of the page goes to ``failure.png`` and JupyterLab's log to
    the captured output.
    """
    home = tmp_path / "chromium-home"  # crash reports and caches stay in the temp dir too
    home.mkdir()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(chromium), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 1000},
            env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
                 "XDG_CACHE_HOME": str(home / "cache")},
        )
        try:
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            page.goto(lab.notebook_url("browse.ipynb"), wait_until="domcontentloaded")
            # The kernel is ready when the toolbar's indicator says idle.
            expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first
                   ).to_be_attached(timeout=TIMEOUT_MS)
            run_all_cells(page, "browse.ipynb", len(NOTEBOOK_CELLS))
            browser = page.locator(".nsframe-browser")
            expect(browser).to_be_visible(timeout=TIMEOUT_MS)
            yield browser
        except Exception:
            # What the page looked like when it went wrong, beside the JupyterLab log.
            for open_page in context.pages:
                open_page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            # pytest shows this captured output with the failure, so CI keeps the server's side.
            print("JupyterLab log, last lines:\n", lab.log.read_text()[-6000:])
            raise
        finally:
            context.close()


def _screenshot(browser: Locator, path: Path) -> None:
    """The whole page with the widget in view, in the test's temp dir (and in
    ``$NSFRAME_UI_SCREENSHOTS`` when set)."""
    browser.scroll_into_view_if_needed()
    browser.page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    keep = os.environ.get("NSFRAME_UI_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def test_browser_renders_and_a_version_click_changes_the_preview(
    chromium: Path, lab: Lab, versioned_table: VersionedTable, tmp_path: Path,
) -> None:
    first, _, latest = versioned_table.versions
    with browsing(chromium, lab, tmp_path) as browser:
        preview = browser.locator(".nsframe-preview")
        # At first the latest version: alpha (id 1) was deleted, delta was added.
        expect(preview).to_contain_text(f"version {latest}", timeout=TIMEOUT_MS)
        expect(preview).to_contain_text("of 4 rows")
        expect(preview).to_contain_text("delta")
        expect(preview).not_to_contain_text("alpha")

        versions = browser.locator(".nsframe-versions select")
        expect(versions.locator("option")).to_have_count(3)
        versions.locator("option", has_text=re.compile(rf"^v{first}\b")).click()

        expect(preview).to_contain_text(f"version {first}", timeout=TIMEOUT_MS)
        expect(preview).to_contain_text("of 3 rows")
        expect(preview).to_contain_text("alpha")
        expect(preview).not_to_contain_text("delta")
        # The tag on version 1 shows in the timeline.
        expect(versions).to_contain_text("first")
        # At 1280 px no label, button or timeline entry is cut off.
        cut = browser.evaluate(CUT_OFF_JS)
        assert cut == [], cut
        _screenshot(browser, tmp_path / "browser.png")


QUESTION = "what can I look at in the night sky?"


def test_a_typed_question_is_searched_by_meaning(
    chromium: Path, meaning_lab: Lab, tmp_path: Path,
) -> None:
    with browsing(chromium, meaning_lab, tmp_path) as browser:
        preview = browser.locator(".nsframe-preview")
        expect(preview).to_contain_text("of 3000 rows", timeout=TIMEOUT_MS)
        browser.get_by_text("Search", exact=True).first.click()  # the accordion's title
        search = browser.locator(".nsframe-search")
        expect(search).to_be_visible()
        # The table has a function: searching by meaning is the mode already chosen, and
        # the function is named before anything is typed.
        expect(search.locator("button.mod-active[data-value='meaning']")).to_have_count(1)
        expect(search.get_by_label("function")).to_contain_text(
            "sentence-transformers all-MiniLM-L6-v2 on text")
        search.locator("input[placeholder*='by meaning']").fill(QUESTION)
        search.locator("input[placeholder^='SQL filter']").fill("")
        search.get_by_label("limit").fill("5")
        search.locator("button", has_text=re.compile(r"^\s*Search\s*$")).click()

        # The first search loads the model in the kernel: give it the long timeout.
        expect(preview).to_contain_text(
            f"search: 5 nearest in meaning to '{QUESTION}' "
            "(sentence-transformers all-MiniLM-L6-v2 on text)", timeout=TIMEOUT_MS)
        expect(browser.locator(".nsframe-error")).to_have_count(0)
        # Texts that share no word with the question but its meaning: what one sees in
        # the night sky, all from the astronomy category, nearest first.
        rows = preview.locator("tr:has(td)")
        expect(rows).to_have_count(5)
        for n in range(5):
            expect(rows.nth(n)).to_contain_text("astronomy")
        # (A long text is cut in its cell; its whole text is the cell's tooltip.)
        expect(rows.first.locator("td[title*='Orion nebula']")).not_to_have_count(0)
        cut = browser.evaluate(CUT_OFF_JS)
        assert cut == [], cut
        # The heading wraps within the widget, so the function's name is read whole (the
        # wide table scrolls on its own).
        overflow = preview.locator("b").first.evaluate(
            "b => b.getBoundingClientRect().right"
            " - b.closest('.nsframe-browser').getBoundingClientRect().right")
        assert overflow <= 1, f"the heading runs {overflow}px past the widget"
        _screenshot(browser, tmp_path / "browser-meaning.png")
