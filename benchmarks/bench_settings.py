"""What deriving every setting from one declaration costs `nsframe serve` at start-up.

The settings are read once, before the server starts; no request reads a source, and a
request reads `ServerConfig`'s attributes as before (a plain dataclass), so the cost per
request is nil. At start-up it is the import of the derivation and one merge of the
sources. Measured in fresh interpreters, interleaved, once the server is imported (every
start pays for that anyway), against importing pydantic-settings, the alternative (the
server does not import pydantic); and, from ``-X importtime``, what the declarations'
modules add to the server import itself.

    .venv/bin/python benchmarks/bench_settings.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import compileall
import subprocess
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, print_table, write_results

from nsframe.server._config_file import config_from_argv

REPO = Path(__file__).resolve().parents[1]
# The server is imported first, untimed: every start pays for it (about 0.8 s idle).
TIMED = "{first}\nimport time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
SERVER = "import nsframe.server"
MERGE = ("config_from_argv(['/tmp/x', '--max-k', '5', '--api-key', 'k' * 20], "
         "{'NSFRAME_QUERY_TIMEOUT': '30', 'NSFRAME_VEND_STORAGE_OPTIONS': 'true'})")
CASES = {
    "nothing (baseline)": (SERVER, "pass"),
    "import the derivation + one merge": (
        SERVER, "from nsframe.server._config_file import config_from_argv\n" + MERGE),
    "import pydantic_settings": (SERVER, "import pydantic_settings"),
}


def fresh(first: str, code: str) -> float:
    out = subprocess.run([sys.executable, "-c", TIMED.format(first=first, code=code)], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


DECLARING = ("nsframe.server._settings", "nsframe.server._limits", "nsframe.server._config")


def import_self_seconds() -> dict[str, float]:
    """Each declaring module's own import time (``-X importtime``'s self column)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", SERVER], cwd=REPO,
                         capture_output=True, text=True, check=True).stderr
    found: dict[str, float] = {}
    for line in err.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] in DECLARING:
            found[parts[2]] = int(parts[0]) / 1e6
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    # As installed: compiled once. (With PYTHONDONTWRITEBYTECODE set and a changed
    # source, every start would compile the modules again, 10 ms for `_settings`.)
    compileall.compile_dir(REPO / "nsframe", quiet=1)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    own: dict[str, list[float]] = {name: [] for name in DECLARING}
    for _ in range(args.repeat):
        for name, seconds in import_self_seconds().items():
            own[name].append(seconds)
        for name, (first, code) in CASES.items():  # interleaved: drift hits all alike
            times[name].append(fresh(first, code))
    base = median(times["nothing (baseline)"])
    rows = [[name, f"{median(found) * 1000:.2f} ms",
             f"+{(median(found) - base) * 1000:.2f} ms"] for name, found in times.items()]
    argv = ["/tmp/x", "--max-k", "5", "--api-key", "k" * 20]
    env = {"NSFRAME_QUERY_TIMEOUT": "30", "NSFRAME_VEND_STORAGE_OPTIONS": "true"}
    merge = min(timeit.repeat(lambda: config_from_argv(argv, env), number=100, repeat=5)) / 100
    rows.append(["one merge of flags + environment, in process", f"{merge * 1000:.2f} ms", ""])
    for name, found in own.items():
        rows.append([f"{name} (its own import, within the server's)",
                     f"{median(found) * 1000:.2f} ms", ""])
    print_table(["after the server import, timed", "median", "vs baseline"], rows)
    write_results("settings", {"medians": {k: median(v) for k, v in times.items()},
                               "merge_seconds": merge,
                               "import_self": {k: median(v) for k, v in own.items()}})


if __name__ == "__main__":
    main()
