"""Start a real JupyterLab for the browser tests, and the chromium flags that work here."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import requests
import websocket

CHROMIUM = Path("/usr/bin/chromium")
# The flags that let chromium start quietly as root on a machine without outside network.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
LAB_START_TIMEOUT = 180.0

NOTEBOOK_CELLS = [
    "import os\n\nimport nsframe\nfrom nsframe.widgets import browse",
    'conn = nsframe.connect(os.environ["NSFRAME_URL"])\n'
    'table = conn.table(os.environ["NSFRAME_TABLE"])',
    "w = browse(table, connection=conn)\nw",
]


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it listens and the token it wants."""

    url: str
    token: str
    root: Path
    log: Path

    def notebook_url(self, name: str, workspace: str | None = None) -> str:
        """The notebook in JupyterLab; in a ``workspace`` of its own, no other tab opens."""
        space = f"/workspaces/{workspace}" if workspace else ""
        return f"{self.url}/lab{space}/tree/{name}?token={self.token}"

    def start_kernel(self, notebook: str) -> str:
        """Start the notebook's kernel and wait until it answers. A page that connects to a
        kernel still starting can lose its first requests (jupyter_server answers the
        websocket with a 500 and the page reconnects), so the page should find it ready."""
        headers = {"Authorization": f"token {self.token}"}
        answer = requests.post(f"{self.url}/api/sessions", headers=headers, timeout=30, json={
            "path": notebook, "name": notebook, "type": "notebook",
            "kernel": {"name": "python3"}})
        answer.raise_for_status()
        channels = (f"{self.url.replace('http://', 'ws://')}/api/kernels/"
                    f"{answer.json()['kernel']['id']}/channels?token={self.token}")
        deadline = time.monotonic() + LAB_START_TIMEOUT
        while time.monotonic() < deadline:
            if _kernel_answers(channels):
                return str(answer.json()["kernel"]["id"])
            time.sleep(0.5)
        pytest.fail(f"The kernel of {notebook} did not answer in {LAB_START_TIMEOUT}s.")


def _kernel_answers(channels: str) -> bool:
    """Whether the kernel replies to a kernel_info_request over the server's websocket."""
    msg_id = uuid.uuid4().hex
    request = {"header": {"msg_id": msg_id, "msg_type": "kernel_info_request", "username": "",
                          "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
               "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell",
               "buffers": []}
    try:
        ws = websocket.create_connection(channels, timeout=10)
    except (websocket.WebSocketException, OSError):
        return False  # the server is still wiring the kernel up
    try:
        ws.send(json.dumps(request))
        while True:
            reply = json.loads(ws.recv())
            if reply.get("parent_header", {}).get("msg_id") == msg_id \
                    and reply.get("msg_type") == "kernel_info_reply":
                return True
    except (websocket.WebSocketException, OSError, ValueError):
        return False
    finally:
        ws.close()


@dataclass(frozen=True)
class VersionedTable:
    """A table with three versions (3 rows, then 5, then 4) and a tag on the first."""

    id: str
    versions: tuple[int, int, int]


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, path)


def copy_notebooks(source: Path, dest: Path) -> dict[str, int]:
    """The project's notebooks, without their outputs, into ``dest``: what a person who
    opens them and presses "Run All" starts from. Returns the code cells of each."""
    cells: dict[str, int] = {}
    for path in sorted(source.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        notebook.metadata.pop("widgets", None)
        nbformat.write(notebook, dest / path.name)
        cells[path.name] = sum(c.cell_type == "code" for c in notebook.cells)
    return cells


# A function for Playwright's evaluate: the texts of a widget that are cut off (see the file).
# Its comment lines are dropped: Playwright takes the text for a function only when it
# starts like one.
CUT_OFF_JS = "\n".join(line for line in Path(__file__).with_name("cut_off.js").read_text(
    encoding="utf-8").splitlines() if not line.startswith("//"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    # Settings, workspaces and runtime files of this run only, so nothing of a
    # developer's own JupyterLab state (open tabs, dialogs) leaks in.
    for name, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                      ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                      ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    # No "get notified about news?" toast over the notebook, no "select a kernel" dialog.
    for plugin, settings in [("apputils-extension/notification",
                              '{"fetchNews": "false", "checkForUpdates": false}'),
                             ("notebook-extension/tracker", '{"autoStartDefaultKernel": true}')]:
        path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(settings)
    env.update(extra, PYTHONUNBUFFERED="1")
    return env


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, token: str, log: Path) -> None:
    deadline = time.monotonic() + LAB_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if requests.get(f"{url}/api/status", params={"token": token}, timeout=2).ok:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer in {LAB_START_TIMEOUT}s:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    # Kernels run in the same process group: make sure none outlives the test.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def running_lab(workdir: Path, env: dict[str, str]) -> Iterator[Lab]:
    """JupyterLab on a free loopback port over ``workdir/notebooks``, with ``env`` added to
    its environment (which its kernels inherit)."""
    root = workdir / "notebooks"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    log = workdir / "jupyterlab.log"
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        # Nothing may reach outside: no update check, no extension index.
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    with log.open("wb") as out:
        # A process group of its own, so teardown stops the server and its kernels together.
        proc = subprocess.Popen(command, cwd=root, env=_environment(workdir / "jupyter", env),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(proc, url, token, log)
        yield Lab(url=url, token=token, root=root, log=log)
    finally:
        _stop(proc)
