"""What deriving every setting from one declaration costs `nsframe serve` at start-up.

The settings are read once, before the server starts; no request reads a source, and a
request reads `ServerConfig`'s attributes as before (a plain dataclass), so the cost per
request is nil. At start-up it is the import of the derivation and one merge of the
sources. Measured in fresh interpreters, interleaved, against the server import that
every start pays anyway, and against importing pydantic-settings, the alternative.

    .venv/bin/python benchmarks/bench_settings.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, print_table, write_results

from nsframe.server._config_file import config_from_argv

REPO = Path(__file__).resolve().parents[1]
TIMED = "import time; t = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
CASES = {
    "server import (baseline)": "import nsframe.server",
    "server import + settings merge": (
        "import nsframe.server\n"
        "from nsframe.server._config_file import config_from_argv\n"
        "config_from_argv(['/tmp/x', '--max-k', '5', '--api-key', 'k' * 20], "
        "{'NSFRAME_QUERY_TIMEOUT': '30', 'NSFRAME_VEND_STORAGE_OPTIONS': 'true'})"),
    "server import + pydantic_settings": "import nsframe.server\nimport pydantic_settings",
}


def fresh(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", TIMED.format(code=code)], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeat):
        for name, code in CASES.items():  # interleaved: drift hits every case alike
            times[name].append(fresh(code))
    base = median(times["server import (baseline)"])
    rows = [[name, f"{median(found) * 1000:.1f} ms", f"{median(found) / base:.3f}x"]
            for name, found in times.items()]
    argv = ["/tmp/x", "--max-k", "5", "--api-key", "k" * 20]
    env = {"NSFRAME_QUERY_TIMEOUT": "30", "NSFRAME_VEND_STORAGE_OPTIONS": "true"}
    merge = min(timeit.repeat(lambda: config_from_argv(argv, env), number=100, repeat=5)) / 100
    rows.append(["one merge of flags + environment, in process", f"{merge * 1000:.2f} ms", ""])
    print_table(["case", "median", "vs baseline"], rows)
    write_results("settings", {"medians": {k: median(v) for k, v in times.items()},
                               "merge_seconds": merge})


if __name__ == "__main__":
    main()
