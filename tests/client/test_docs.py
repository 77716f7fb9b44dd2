"""The docs keep up with the code: every public name, every error class and code, every link.

Pure file checks: they read `docs/*.md` and the package's `__all__` lists, no server needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import nsframe
import nsframe.datasets
import nsframe.server
import nsframe.widgets
from nsframe import exceptions

DOCS = Path(__file__).resolve().parents[2] / "docs"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
CODE_ROW = re.compile(r"^\|\s*(\d{1,2})\s*\|(.*)$")  # the code table; statuses have 3 digits


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def mentioned(name: str, text: str) -> bool:
    """``name`` appears as code (`name`, `name(`, `nsframe.name`, `.name`), not inside a word."""
    return re.search(rf"`(?:[\w.]*\.)?{re.escape(name)}(?:[`(\[ ]|$)", text) is not None


def slug(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else HEADING.match(line)
        if match:
            found.add(slug(match.group(1)))
    return found


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # links shown as code are examples, not links
    return LINK.findall(text)


@pytest.mark.parametrize("name", sorted(nsframe.__all__))
def test_every_public_name_is_in_the_api_reference(name: str) -> None:
    assert mentioned(name, read("api.md")), f"docs/api.md does not document nsframe.{name}"


@pytest.mark.parametrize(
    "module", [nsframe.datasets, nsframe.server, nsframe.widgets], ids=lambda m: m.__name__
)
def test_every_public_name_of_the_other_modules_is_in_the_api_reference(module: object) -> None:
    text = read("api.md")
    missing = [n for n in module.__all__ if not mentioned(n, text)]  # type: ignore[attr-defined]
    assert missing == [], f"docs/api.md does not document {missing}"


ERROR_CLASSES = sorted(
    name for name in exceptions.__all__
    if isinstance(getattr(exceptions, name), type)
    and issubclass(getattr(exceptions, name), BaseException)
)


@pytest.mark.parametrize("name", ERROR_CLASSES)
def test_every_error_class_is_in_the_errors_page(name: str) -> None:
    assert mentioned(name, read("errors.md")) or re.search(
        rf"(^|[\s│├└─]){name}(\s|$)", read("errors.md"), flags=re.M
    ), f"docs/errors.md does not mention {name}"


def code_rows() -> dict[int, str]:
    rows: dict[int, str] = {}
    for line in read("errors.md").splitlines():
        match = CODE_ROW.match(line)
        if match:
            code = int(match.group(1))
            assert code not in rows, f"code {code} has two rows in docs/errors.md"
            rows[code] = match.group(2)
    return rows


def test_the_errors_page_lists_every_lance_error_code_once() -> None:
    assert sorted(code_rows()) == list(range(24))


@pytest.mark.parametrize("code", range(24))
def test_each_code_row_names_the_class_and_status_the_code_maps_to(code: int) -> None:
    row = code_rows()[code]
    cells = [cell.strip() for cell in row.split("|")]
    status = int(re.findall(r"\d{3}", cells[2])[0])
    cls = exceptions.error_class_for(status, code)
    assert cls.code == code, f"code {code} with status {status} maps to {cls.__name__}"
    assert f"`{cls.__name__}`" in cells[1], f"row of code {code} should name {cls.__name__}"


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_relative_links_between_docs_resolve(page: str) -> None:
    source = DOCS / page
    broken = []
    for target in links(source):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not ours to check
        path_part, _, anchor = target.partition("#")
        destination = (source.parent / path_part).resolve() if path_part else source
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target} (no heading #{anchor})")
    assert broken == [], f"broken links in docs/{page}: {broken}"


def test_the_link_checker_sees_links_and_anchors() -> None:
    # Guards the two checks above against a regex that silently finds nothing.
    assert "client.md#connecting" in links(DOCS / "guide.md")
    assert {"connecting", "retries"} <= anchors(DOCS / "client.md")
    assert slug("`nsframe serve` flags") == "nsframe-serve-flags"
    assert slug("`nsframe.exceptions`") == "nsframeexceptions"


# ------------------------------------------------------------ citations of the contract
REPO = DOCS.parent
# A citation of the contract's files: a path ending in one of them, e.g. spec/SEED_SPEC.md.
SPEC_CITATION = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*(?:SEED_SPEC\.md|UPSTREAM_NOTES\.md|upstream-openapi\.yaml"
    r"|spec/README\.md))"
)
CITING_FILES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "Makefile", "pyproject.toml")
CITING_FOLDERS = ("nsframe", "tests", "docs", "tools", "benchmarks", "notebooks")


def citing_files() -> list[Path]:
    files = [REPO / name for name in CITING_FILES if (REPO / name).exists()]
    for folder in CITING_FOLDERS:
        files += sorted(p for p in (REPO / folder).rglob("*")
                        if p.suffix in {".py", ".md", ".ipynb", ".toml", ".cfg"}
                        and ".ipynb_checkpoints" not in p.parts)
    return [p for p in files if p != Path(__file__).resolve()]  # this file's probes


def unresolved_citations(path: Path) -> list[str]:
    """Citations in ``path`` that name no file, from the repository root or from the file."""
    text = path.read_text(encoding="utf-8")
    return sorted({cited for cited in SPEC_CITATION.findall(text)
                   if not (REPO / cited).is_file() and not (path.parent / cited).is_file()})


def test_the_contract_lives_in_the_repository() -> None:
    for name in ("SEED_SPEC.md", "README.md", "UPSTREAM_NOTES.md", "upstream-openapi.yaml"):
        assert (REPO / "spec" / name).is_file(), f"spec/{name} is missing"


def test_every_citation_of_the_contract_resolves() -> None:
    files = citing_files()
    assert any(p.name == "exceptions.py" for p in files)
    broken = {str(p.relative_to(REPO)): bad for p in files if (bad := unresolved_citations(p))}
    assert broken == {}, f"citations of files that do not exist: {broken}"
    cited = sum(len(SPEC_CITATION.findall(p.read_text(encoding="utf-8"))) for p in files)
    assert cited > 20  # the check sees them


def test_the_citation_check_sees_a_bare_name(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('"""As SEED_SPEC.md says; see spec/UPSTREAM_NOTES.md and x/SEED_SPEC.md."""')
    assert unresolved_citations(probe) == ["SEED_SPEC.md", "x/SEED_SPEC.md"]
