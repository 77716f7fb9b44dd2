"""`import nsframe` stays light: no server, web framework, Lance or widgets."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("nsframe.server", "starlette", "uvicorn", "lance", "ipywidgets", "polars")


def loaded_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True).stdout
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
