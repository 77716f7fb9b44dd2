"""The docs keep up with the code: every public name, every error class and code, every link.

Pure file checks: they read `docs/*.md` and the package's `__all__` lists, no server needed.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
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


# ------------------------------------------------------------ signatures in api.md
SIGNATURE = re.compile(r"^(\w+)\((.*)\)(?:\s*->\s*(.+))?$")
SIZE = re.compile(r"\b(\d+) (KiB|MiB|GiB)\b")
UNITS = {"KiB": "2**10", "MiB": "2**20", "GiB": "2**30"}


def api_sections() -> dict[str, list[list[str]]]:
    """The tables of api.md by heading: each row a list of cells."""
    sections: dict[str, list[list[str]]] = {}
    heading = ""
    for line in read("api.md").splitlines():
        match = HEADING.match(line)
        if match:
            heading = match.group(1).strip("`")
            continue
        if line.startswith("|") and not re.match(r"^\|[-\s|]+\|$", line):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            sections.setdefault(heading, []).append(cells)
    return sections


def documented_signatures(cells: list[str]) -> list[tuple[str, str, str | None]]:
    """Every ``name(params) -> returns`` in a row's signature cell (the second), as
    (name, params, returns)."""
    found = []
    for cell in cells[1:2]:
        for code in re.findall(r"`([^`]+)`", cell.replace("\\|", "|")):
            match = SIGNATURE.match(code.strip())
            if match:
                found.append((match.group(1), match.group(2), match.group(3)))
    return found


def parameters_of(params: str) -> list[tuple[str, str, object]]:
    """(name, kind, default) of each parameter written in the docs; sizes as numbers."""
    source = SIZE.sub(lambda m: f"{m.group(1)} * {UNITS[m.group(2)]}", params)
    tree = ast.parse(f"def f({source}): pass").body[0]
    assert isinstance(tree, ast.FunctionDef)
    args = tree.args
    result: list[tuple[str, str, object]] = []

    def value(node: ast.expr | None) -> object:
        if node is None:
            return inspect.Parameter.empty
        # Constants, sizes and the server's Limits() are all a default may be.
        from nsframe.server._limits import Limits

        return eval(compile(ast.Expression(node), "<api.md>", "eval"), {"Limits": Limits})

    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        result.append((arg.arg, "POSITIONAL_OR_KEYWORD", value(default)))
    if args.vararg:
        result.append((args.vararg.arg, "VAR_POSITIONAL", inspect.Parameter.empty))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        result.append((arg.arg, "KEYWORD_ONLY", value(default)))
    if args.kwarg:
        result.append((args.kwarg.arg, "VAR_KEYWORD", inspect.Parameter.empty))
    return result


def parameters_in_code(func: object) -> list[tuple[str, str, object]]:
    signature = inspect.signature(func)  # type: ignore[arg-type]
    factories = {f.name: f.default_factory for f in dataclasses.fields(func)  # type: ignore[arg-type]
                 if f.default_factory is not dataclasses.MISSING} \
        if dataclasses.is_dataclass(func) else {}
    return [(p.name, "POSITIONAL_OR_KEYWORD" if p.kind.name == "POSITIONAL_ONLY" else p.kind.name,
             factories[p.name]() if p.name in factories else p.default)
            for p in signature.parameters.values() if p.name not in ("self", "cls")]


def same_default(documented: object, actual: object) -> bool:
    if documented is inspect.Parameter.empty or actual is inspect.Parameter.empty:
        return documented is actual
    if isinstance(documented, bool) or isinstance(actual, bool):
        return documented is actual
    return bool(documented == actual)


def api_classes() -> dict[str, tuple[type, str]]:
    """api.md's section (or Models row) for each class whose methods it must list."""
    from nsframe.accessors._pandas import PandasNs
    from nsframe.widgets import Browser

    return {
        "Connection": (nsframe.Connection, "Connection"),
        "Namespace": (nsframe.Namespace, "Namespace"),
        "Table": (nsframe.Table, "Table"),
        "Query": (nsframe.Query, "Query"),
        "Tags": (nsframe.Tags, "Models"),
        "Branches": (nsframe.Branches, "Models"),
        "MergeInsert": (nsframe.MergeInsert, "Models"),
        "History": (nsframe.History, "Models"),
        "df.ns": (PandasNs, "DataFrame accessors: `df.ns"),
        "Browser": (Browser, "nsframe.widgets"),
    }


def public_methods(cls: type) -> list[str]:
    """The public methods nsframe defines on ``cls`` (not those ipywidgets gives a widget)."""
    names = set()
    for owner in cls.__mro__:
        if not owner.__module__.startswith("nsframe"):
            continue
        for name, attribute in vars(owner).items():
            if not name.startswith("_") and (
                    isinstance(attribute, (staticmethod, classmethod))
                    or inspect.isfunction(attribute)):
                names.add(name)
    return sorted(names)


def class_rows(section: str, cls_name: str) -> list[list[str]]:
    rows = api_sections()[section]
    if section in ("Models", "nsframe.widgets"):
        return [r for r in rows if r[0] == f"`{cls_name}`"]
    return rows


@pytest.mark.parametrize("name", sorted(api_classes()))
def test_every_public_method_has_its_signature_in_the_api_reference(name: str) -> None:
    cls, section = api_classes()[name]
    rows = class_rows(section, cls.__name__)
    documented = {sig[0] for row in rows for sig in documented_signatures(row)}
    # A row listing aliases (`insert`, `add` (alias)) documents them with one signature.
    aliases = {n for row in rows for n in re.findall(r"`(\w+)`", row[0])}
    missing = [m for m in public_methods(cls) if m not in documented and not (
        m in aliases and any(getattr(cls, m) is getattr(cls, d, None) for d in documented))]
    assert missing == [], f"docs/api.md gives no signature for {name}.{missing}"


def documented_pairs() -> list[tuple[str, object, str, str]]:
    """(label, function, documented params, heading) for every signature api.md gives."""
    import nsframe.datasets as datasets
    import nsframe.server as server
    import nsframe.widgets as widgets

    pairs: list[tuple[str, object, str, str]] = []
    for cls_name, (cls, section) in api_classes().items():
        for row in class_rows(section, cls.__name__):
            for method, params, _ in documented_signatures(row):
                if cls_name in ("Browser",) and method == cls.__name__:
                    pairs.append((method, cls, params, section))
                elif hasattr(cls, method):
                    pairs.append((f"{cls_name}.{method}", getattr(cls, method), params, section))
    for section, module in (("Connecting", nsframe), ("nsframe.datasets", datasets),
                            ("nsframe.server", server), ("nsframe.widgets", widgets)):
        for row in api_sections()[section]:
            for function, params, _ in documented_signatures(row):
                if hasattr(module, function):
                    pairs.append((f"{module.__name__}.{function}",
                                  getattr(module, function), params, section))
    return pairs


def test_the_signature_check_sees_every_section() -> None:
    labels = {label for label, *_ in documented_pairs()}
    assert {"Connection.create_table", "Table.insert", "Query.where", "df.ns.insert",
            "nsframe.connect", "nsframe.server.serve_in_thread", "Tags.create"} <= labels
    assert len(labels) > 120


@pytest.mark.parametrize("label,function,params",
                         [(label, f, p) for label, f, p, _ in documented_pairs()],
                         ids=[label for label, *_ in documented_pairs()])
def test_each_signature_in_the_api_reference_matches_the_code(
        label: str, function: object, params: str) -> None:
    documented = parameters_of(params)
    actual = parameters_in_code(function)
    assert [(n, k) for n, k, _ in documented] == [(n, k) for n, k, _ in actual], \
        f"docs/api.md: {label}({params}) but the code has {inspect.signature(function)}"  # type: ignore[arg-type]
    wrong = [(n, d, a) for (n, _, d), (_, _, a) in zip(documented, actual, strict=True)
             if not same_default(d, a)]
    assert wrong == [], f"docs/api.md: {label}: defaults (name, doc, code) differ: {wrong}"


# ------------------------------------------------------------ examples in the docstrings
def public_members(cls: type) -> dict[str, object]:
    """The public methods and properties nsframe defines on ``cls`` and its nsframe bases
    (a property as its getter)."""
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    members: dict[str, object] = {}
    for owner in reversed(cls.__mro__):
        if not owner.__module__.startswith("nsframe"):
            continue
        for name, attribute in vars(owner).items():
            if name.startswith("_") or name in fields:
                continue
            if isinstance(attribute, property):
                members[name] = attribute.fget
            elif isinstance(attribute, (staticmethod, classmethod)):
                members[name] = attribute.__func__
            elif inspect.isfunction(attribute):
                members[name] = attribute
    return members


def documented_classes() -> list[type]:
    from nsframe.accessors._polars import PolarsLazyNs, PolarsNs

    return [cls for cls, _ in api_classes().values()] + [PolarsNs, PolarsLazyNs]


@pytest.mark.parametrize("cls", documented_classes(), ids=lambda c: c.__name__)
def test_every_public_method_has_a_docstring_with_an_example(cls: type) -> None:
    members = public_members(cls)
    assert members
    missing = sorted(name for name, member in members.items()
                     if ">>>" not in (inspect.getdoc(member) or ""))
    assert missing == [], f"{cls.__name__}: no example in the docstring of {missing}"


# ------------------------------------------------------------ every Python example is run
FENCE = re.compile(r"^```([\w+-]*)\n(.*?)^```", re.S | re.M)
# `make examples` runs only ```python blocks
NOT_PYTHON = {"", "sh", "json", "toml", "text", "yaml"}
LOOKS_LIKE_PYTHON = re.compile(r"^(>>> |import \w|from [\w.]+ import )", re.M)


PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", PAGES)
def test_python_examples_are_fenced_as_python_so_that_they_run(page: str) -> None:
    for language, body in FENCE.findall((REPO / page).read_text(encoding="utf-8")):
        if language == "python":
            continue
        assert language in NOT_PYTHON, f"{page}: a ```{language} block; Python is ```python"
        assert not LOOKS_LIKE_PYTHON.search(body), \
            f"{page}: Python in a ```{language} block, which `make examples` would not run"
