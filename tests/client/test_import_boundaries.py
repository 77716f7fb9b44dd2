"""Import boundaries: `import nsframe` stays light (no server, web framework, Lance or
widgets), and the server's route modules never import one another."""

from __future__ import annotations

import ast
import subprocess
import sys

HEAVY = ("nsframe.server", "starlette", "uvicorn", "lance", "ipywidgets", "polars")


def loaded_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return set(out.split())


def test_import_nsframe_leaves_heavy_modules_out() -> None:
    modules = loaded_after("import nsframe")
    assert "nsframe" in modules and "nsframe._http" in modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)}


def test_a_remote_connection_and_query_build_stay_light() -> None:
    modules = loaded_after(
        "import nsframe\n"
        "conn = nsframe.connect('http://127.0.0.1:9')\n"
        "q = conn['db$t'].search([1.0, 2.0]).where('id > 1').limit(3)\n"
        "q.explain(); repr(q)"
    )
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)}


def test_client_modules_never_import_the_server() -> None:
    import pathlib

    import nsframe

    package = pathlib.Path(nsframe.__file__).parent
    for path in package.glob("_*.py"):
        text = path.read_text()
        if path.name == "_connection.py":
            # The one allowed use: a lazy import inside connect() for the embedded server.
            assert text.count("from nsframe.server import serve_in_thread") == 1
            assert "\nfrom nsframe.server" not in text and "\nimport nsframe.server" not in text
        elif path.name != "_cli.py":
            assert "nsframe.server" not in text, path.name


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
    import pathlib

    import nsframe

    folder = pathlib.Path(nsframe.__file__).parent / "server" / "_routes"
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
