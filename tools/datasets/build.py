"""Rebuild ``sample_texts.parquet``: generate the corpus and embed it with the packaged model.

Run from the repository root in an environment that has the model (see README.md)::

    python -m tools.datasets.build
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

import nsframe.datasets
from nsframe.datasets import _model
from tools.datasets import corpus
from tools.datasets.corpus import SampleRow

# Next to the loader that reads it, in the nsframe that is imported (this checkout's).
DEFAULT_OUT = Path(nsframe.datasets.__file__).with_name("sample_texts.parquet")
METADATA_KEY = b"nsframe.sample_info"
STORED_DTYPE = "float16"


def sample_info(rows: Sequence[SampleRow]) -> dict[str, Any]:
    """What the file records about itself, read back by ``nsframe.datasets.sample_info()``."""
    versions = _model.versions()
    return {
        "name": "sample_texts",
        "rows": len(rows),
        "categories": sorted({row.category for row in rows}),
        "seed": corpus.SEED,
        "generator": "tools/datasets/build.py",
        "text_license": "Apache-2.0",
        "embedded_column": "text",
        "model": _model.MODEL_NAME,
        "model_package": _model.MODEL_PACKAGE,
        "model_package_version": versions[_model.MODEL_PACKAGE],
        "library_versions": versions,
        "dimension": _model.DIMENSION,
        "normalized": True,
        "metric": "cosine",
        "stored_dtype": STORED_DTYPE,
        "loaded_dtype": "float32",
    }


def build_table(
    rows: Sequence[SampleRow], vectors: npt.NDArray[np.float32], info: dict[str, Any]
) -> pa.Table:
    """The rows and their vectors as stored: vectors in float16 to halve the file."""
    flat = pa.array(vectors.astype(np.float16).reshape(-1))
    columns = {
        "id": pa.array([row.id for row in rows], pa.int64()),
        "category": pa.array([row.category for row in rows], pa.string()),
        "title": pa.array([row.title for row in rows], pa.string()),
        "text": pa.array([row.text for row in rows], pa.string()),
        "rating": pa.array([row.rating for row in rows], pa.float64()),
        "reads": pa.array([row.reads for row in rows], pa.int64()),
        "published": pa.array([row.published for row in rows], pa.date32()),
        "vector": pa.FixedSizeListArray.from_arrays(flat, _model.DIMENSION),
    }
    table = pa.table(columns)
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(info, sort_keys=True)})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the file")
    args = parser.parse_args(argv)
    # Belt and braces for a build that must never fetch anything.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    rows = corpus.generate_rows()
    vectors = _model.encode([row.text for row in rows])
    table = build_table(rows, vectors, sample_info(rows))
    pq.write_table(table, args.out, compression="zstd", compression_level=19)
    size_mb = args.out.stat().st_size / 1e6
    print(f"wrote {table.num_rows} rows to {args.out} ({size_mb:.2f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
