"""Fuzz the REST service with schemathesis, from upstream's OpenAPI document.

Starts a server over a temporary directory holding a namespace and a few tables, runs
``schemathesis run`` against it with one check, ``not_a_server_error``: whatever a
client sends, the answer is never a 5xx (a client mistake is a 4xx with the error body).
Every operation of the spec is exercised, ours and the ones we do not serve (404/405).

    make fuzz                                    # 300 s
    .venv/bin/python tests/fuzz/fuzz_api.py --seconds 60 [--spec PATH]

``make test`` runs it too, for about 100 s (`test_fuzz_api.py`, marker ``fuzz``), on the
copy of upstream's document in the repository: ``spec/upstream-openapi.yaml``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import requests

from nsframe.server import serve_in_thread

HERE = Path(__file__).resolve().parent
SPEC = HERE.parents[1] / "spec/upstream-openapi.yaml"


def find_spec() -> Path | None:
    """The upstream OpenAPI document kept in the repository (``spec/``)."""
    return SPEC if SPEC.is_file() else None


DEFAULT_SPEC = SPEC


def seed(url: str) -> None:
    """A namespace, tables and indexes under the names schemathesis.toml offers."""
    resp = requests.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30)
    resp.raise_for_status()
    rng = np.random.default_rng(0)
    table = pa.table({
        "id": pa.array(range(100), pa.int64()),
        "text": [f"word {i}" for i in range(100)],
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(400, dtype=np.float32)), 4),
    })
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    for name in ("ns$t", "ns$string", "ns$0", "string"):
        resp = requests.post(f"{url}/v1/table/{name}/create", data=sink.getvalue(),
                             headers={"Content-Type": "application/vnd.apache.arrow.stream"},
                             timeout=30)
        resp.raise_for_status()
    # Indexes under the names schemathesis.toml offers for `{index_name}`.
    for column, kind in (("vector", "IVF_FLAT"), ("id", "BTREE"), ("text", "FTS")):
        resp = requests.post(f"{url}/v1/table/ns$t/create_index", timeout=60,
                             json={"column": column, "index_type": kind,
                                   "name": f"{column}_idx", "num_partitions": 2})
        resp.raise_for_status()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--seconds", type=int, default=300)
    args = parser.parse_args(argv)
    if not args.spec.is_file():
        print(f"fuzz_api: no OpenAPI document at {args.spec}: pass --spec", file=sys.stderr)
        return 2
    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if cli is None:
        print("fuzz_api: schemathesis is not installed: pip install 'nsframe[fuzz]'",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nsframe-fuzz-") as root, \
            serve_in_thread(root) as server:
        seed(server.url)
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "hooks",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE),
                                                           os.environ.get("PYTHONPATH")]))}
        command = [cli, "--config-file", str(HERE / "schemathesis.toml"), "run",
                   str(args.spec), "--url", server.url,
                   "--checks", "not_a_server_error", "--max-time", str(args.seconds),
                   # One worker: with two threads, Hypothesis' parsing of its own source
                   # trips CPython 3.11 ("AST constructor recursion depth mismatch").
                   "--workers", "1", "--suppress-health-check", "all",
                   "--continue-on-failure"]
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
