"""`import nsframe` stays light: no server, web framework, Lance or widgets; the client
reaches into the server at two named places only; the protocol needs nothing but pyarrow;
the server's route modules never import one another.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nsframe

HEAVY = ("nsframe.server", "starlette", "uvicorn", "lance", "ipywidgets", "polars")


def loaded_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return set(out.split())


def test_import_nsframe_leaves_heavy_modules_out() -> None:
    modules = loaded_after("import nsframe")
    assert "nsframe" in modules and "nsframe._client" in modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)}


def test_a_remote_connection_and_query_build_stay_light() -> None:
    modules = loaded_after(
        "import nsframe\n"
        "conn = nsframe.connect('http://127.0.0.1:9')\n"
        "q = conn['db$t'].search([1.0, 2.0]).where('id > 1').limit(3)\n"
        "q.request_body(); repr(q)"
    )
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)}


def test_the_cli_loads_the_server_only_for_its_server_commands() -> None:
    modules = loaded_after("import nsframe._cli\nnsframe._cli.build_parser().format_help()")
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)}


PACKAGE = Path(nsframe.__file__).parent
SERVER = "nsframe.server"

# The client's only ways into the server, each one import statement inside one function:
# connect() starts an embedded server for a local folder, and the CLI's server commands
# (`nsframe serve`, `nsframe gc`) run its code. Both import it lazily, so that a remote
# connection and `nsframe --help` never load it.
SERVER_ENTRIES = {
    ("_connection.py", "_serve_in_thread"),
    ("_cli.py", "_server_command"),
}

# What nsframe._protocol may import: the rules both sides share must not pull in either
# side's libraries (pandas, polars, requests, starlette, uvicorn, lance).
PROTOCOL_MAY_IMPORT = ("pyarrow", "nsframe._protocol", "nsframe.exceptions")


@dataclass(frozen=True)
class Import:
    # The statement's module first; `from a import b` then adds a.b, in case b is a module.
    modules: tuple[str, ...]
    scope: str | None  # the qualified name of the function or class it sits in, if any
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(path: Path, name: str | None = None) -> list[Import]:
    """Every import of a module, at any depth: inside functions, classes and
    `if TYPE_CHECKING:` too, and `importlib.import_module("...")` with a literal name."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, scope: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = f"{scope}.{node.name}" if scope else node.name
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            modules = [node.args[0].value]
        if modules:
            found.append(Import(tuple(modules), scope, getattr(node, "lineno", 0)))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), None)
    return found


def is_within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def client_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if not is_within(module_name(p), SERVER))


def test_the_client_imports_the_server_only_at_its_two_entries() -> None:
    assert len(client_modules()) > 20 and PACKAGE / "_cli.py" in client_modules()
    seen: list[tuple[str, str | None]] = []
    for path in client_modules():
        for found in imports_in(path):
            server = [m for m in found.modules if is_within(m, SERVER)]
            if server:
                where = str(path.relative_to(PACKAGE))
                assert (where, found.scope) in SERVER_ENTRIES, \
                    f"{where}:{found.line} imports the server ({server[-1]})"
                seen.append((where, found.scope))
    # Each entry holds exactly one import of the server, and still exists.
    assert sorted(seen) == sorted(SERVER_ENTRIES)


def allowed_in_protocol(found: Import) -> bool:
    statement, *submodules = found.modules
    if statement.split(".")[0] in sys.stdlib_module_names:
        return True
    if any(is_within(statement, allowed) for allowed in PROTOCOL_MAY_IMPORT):
        return True
    # `from nsframe import exceptions`: then each name must be a module it may import.
    return bool(submodules) and all(
        any(is_within(m, allowed) for allowed in PROTOCOL_MAY_IMPORT) for m in submodules
    )


def test_the_protocol_imports_only_the_standard_library_and_pyarrow() -> None:
    paths = sorted((PACKAGE / "_protocol").glob("*.py"))
    assert {p.name for p in paths} >= {"__init__.py", "routes.py", "ids.py", "sql.py"}
    for path in paths:
        for found in imports_in(path):
            assert allowed_in_protocol(found), \
                f"_protocol/{path.name}:{found.line} imports {found.modules[0]}"


def test_the_protocol_rule_refuses_the_libraries_of_either_side() -> None:
    for module in ("pandas", "polars", "requests", "starlette", "uvicorn", "lance",
                   "nsframe", "nsframe._client", "nsframe.server._arrow"):
        assert not allowed_in_protocol(Import((module,), None, 1)), module
    assert not allowed_in_protocol(Import(("nsframe", "nsframe._http"), None, 1))
    assert allowed_in_protocol(Import(("nsframe", "nsframe.exceptions"), None, 1))
    assert allowed_in_protocol(Import(("pyarrow.ipc",), None, 1))


def test_the_import_walker_sees_nested_and_relative_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import nsframe.server\n"
        "def outer():\n    def inner():\n        from . import server\n"
        "class K:\n    def m(self):\n        importlib.import_module('polars')\n",
        encoding="utf-8",
    )
    found = [(i.modules, i.scope) for i in imports_in(probe, "nsframe.probe")][2:]
    assert found == [
        (("nsframe.server",), None),
        (("nsframe", "nsframe.server"), "outer.inner"),
        (("polars",), "K.m"),
    ]


ROUTES_PACKAGE = "nsframe.server._routes"


def imported_modules(source: str, package: str) -> set[str]:
    """Every module an import statement of ``source`` names, anywhere in it (functions
    too), relative imports resolved against ``package``; for ``from m import a`` both
    ``m`` and ``m.a``, since ``a`` may be a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def route_modules_imported(source: str, routes: set[str]) -> set[str]:
    """The route modules (or the route package, which imports them all) ``source`` imports."""
    hits = set()
    for name in imported_modules(source, ROUTES_PACKAGE):
        if name == ROUTES_PACKAGE:
            hits.add(name)
        elif name.startswith(ROUTES_PACKAGE + "."):
            module = name[len(ROUTES_PACKAGE) + 1:].split(".")[0]
            if module in routes:
                hits.add(module)
    return hits


def test_route_modules_never_import_each_other() -> None:
    """What two route modules share lives in `_http`, `_models` or `_storage`."""
    folder = PACKAGE / "server" / "_routes"
    modules = {p.stem: p for p in folder.glob("*.py") if p.name != "__init__.py"}
    assert {"tables", "query", "indexes"} <= set(modules)
    for name, path in sorted(modules.items()):
        assert not route_modules_imported(path.read_text(), set(modules)), name


def test_the_route_import_check_sees_every_spelling() -> None:
    routes = {"tables", "query"}
    for source in (
        "from nsframe.server._routes import tables",
        "from nsframe.server._routes.tables import insert",
        "import nsframe.server._routes.query",
        "from . import tables",
        "from .query import query_table",
        "def handler():\n    from nsframe.server._routes import query\n",
        "from nsframe.server._routes import ROUTES",
    ):
        assert route_modules_imported(source, routes), source
    for source in ("from nsframe.server._models import tables",
                   "from .. import _http", "from ..._spec import JSON"):
        assert not route_modules_imported(source, routes), source


# ------------------------------------------------------------ docs/architecture.md, checked
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
NAME_TOKEN = re.compile(r"[\w.]+(?:/|\.py)")


def architecture_text() -> str:
    return ARCHITECTURE.read_text(encoding="utf-8")


def documented_tree(text: str) -> tuple[set[str], set[str]]:
    """The module tree at the top of architecture.md, as paths relative to the package's
    parent: (modules and folders it names, folders it names without children)."""
    block = text.split("```\n", 2)[1]
    named: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indentation, folder path)
    leaves: set[str] = set()
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        tokens: list[str] = []
        for token in line.split():
            if not NAME_TOKEN.fullmatch(token):
                break
            tokens.append(token)
        if not tokens:
            continue  # the continuation of a description
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        for token in tokens:
            path = parent + token
            named.add(path.rstrip("/"))
            if token.endswith("/"):
                stack.append((indent, path))
    for path in named:
        if not path.endswith(".py") and not any(
            other.startswith(path + "/") for other in named
        ):
            leaves.add(path)
    return named, leaves


def modules_on_disk() -> set[str]:
    root = PACKAGE.parent
    return {str(p.relative_to(root)) for p in PACKAGE.rglob("*.py")}


def test_the_module_tree_of_the_architecture_page_matches_the_package() -> None:
    named, leaves = documented_tree(architecture_text())
    on_disk = modules_on_disk()
    # Every module named exists, every folder named is a package.
    missing = sorted(n for n in named if n.endswith(".py") and n not in on_disk)
    missing += sorted(n for n in named if not n.endswith(".py")
                      and not (PACKAGE.parent / n / "__init__.py").is_file())
    assert missing == [], f"docs/architecture.md names modules that do not exist: {missing}"
    # Every module that exists is named, or sits in a folder listed without children.
    # A package's __init__.py is covered by its folder.
    unlisted = sorted(
        m for m in on_disk
        if m not in named
        and not any(m.startswith(leaf + "/") for leaf in leaves)
        and not (m.endswith("/__init__.py") and m.removesuffix("/__init__.py") in named
                 and m.count("/") > 1)
    )
    assert unlisted == [], f"docs/architecture.md's module tree leaves out {unlisted}"


def test_the_tree_reader_sees_nested_folders_and_shared_lines() -> None:
    text = ("x\n```\nnsframe/\n  a.py b.py   two on a line\n  sub/     a folder\n"
            "    c.py     in it\n             a description line\n  leaf/    no children\n```\n")
    named, leaves = documented_tree(text)
    assert named == {"nsframe", "nsframe/a.py", "nsframe/b.py", "nsframe/sub",
                     "nsframe/sub/c.py", "nsframe/leaf"}
    assert leaves == {"nsframe/leaf"}


SERVER_ROW = re.compile(r"^\|\s*`(_\w+)`\s*\|(.*)\|\s*$")


def documented_server_imports() -> dict[str, set[str]]:
    section = architecture_text().split("## Which way imports go", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        match = SERVER_ROW.match(line)
        if match:
            table[match.group(1)] = set(re.findall(r"`(_\w+)`", match.group(2)))
    return table


def server_imports() -> dict[str, set[str]]:
    """Which parts of nsframe.server (its top-level modules and subpackages) each imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / "server").rglob("*.py")):
        name = module_name(path)
        if name == SERVER:
            continue
        part = name.split(".")[2]
        graph.setdefault(part, set())
        for found in imports_in(path):
            for module in found.modules:
                if is_within(module, SERVER) and module.count(".") >= 2:
                    other = module.split(".")[2]
                    if other != part:
                        graph[part].add(other)
    return graph


def test_the_server_imports_exactly_what_the_architecture_page_says() -> None:
    documented = documented_server_imports()
    assert {"_app", "_routes", "_http", "_storage", "_security"} <= set(documented)
    assert server_imports() == documented


def test_storage_knows_nothing_of_http() -> None:
    paths = sorted((PACKAGE / "server" / "_storage").rglob("*.py"))
    assert len(paths) > 10
    for path in paths:
        for found in imports_in(path):
            for module in found.modules:
                assert module.split(".")[0] not in ("starlette", "uvicorn", "requests"), \
                    f"_storage/{path.name}:{found.line} imports {module}"
                assert not is_within(module, SERVER) or is_within(
                    module, f"{SERVER}._storage"), \
                    f"_storage/{path.name}:{found.line} imports {module}"


def type_checking_lines(path: Path) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


# The modules that import pandas or polars when they run (docs/architecture.md says why);
# in the last three, only inside one function each.
FRAME_MODULES = {"nsframe/_frames.py", "nsframe/_encode.py", "nsframe/_vectors.py",
                 "nsframe/_demo.py"}
FRAME_FOLDERS = ("nsframe/accessors/",)
LAZY_FRAME_MODULES = {"nsframe/_encode.py", "nsframe/_vectors.py", "nsframe/_demo.py"}


def frame_imports() -> dict[str, list[Import]]:
    found: dict[str, list[Import]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hints_only = type_checking_lines(path)
        for imp in imports_in(path):
            if imp.modules[0].split(".")[0] in ("pandas", "polars") \
                    and imp.line not in hints_only:
                found.setdefault(str(path.relative_to(PACKAGE.parent)), []).append(imp)
    return found


def test_pandas_and_polars_are_imported_only_where_the_architecture_page_says() -> None:
    found = frame_imports()
    outside = sorted(m for m in found
                     if m not in FRAME_MODULES and not m.startswith(FRAME_FOLDERS))
    assert outside == [], f"{outside} import pandas or polars outside TYPE_CHECKING"
    for module in LAZY_FRAME_MODULES:
        assert all(imp.scope for imp in found.get(module, [])), \
            f"{module} imports pandas at module level"
    text = " ".join(architecture_text().split())
    for module in sorted(FRAME_MODULES | LAZY_FRAME_MODULES):
        assert f"`{Path(module).name}`" in text, f"architecture.md should name {module}"
    assert "**Only `_frames.py`, `accessors/`, `_encode.py`, `_vectors.py` and `_demo.py` " \
        "import pandas or polars**" in text
