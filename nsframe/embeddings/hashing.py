"""``nsframe-hashing``: a bag-of-words embedding by feature hashing, with no model at all.

Deterministic, instant and dependency-free: for examples, tests and a first try. Texts
that share words get close vectors; it knows nothing of meaning (use
``sentence-transformers`` for that).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from nsframe.embeddings.base import TextEmbeddingFunction, Vectors
from nsframe.embeddings.registry import register

_WORD = re.compile(r"\w+")
MAX_DIM = 65_536


@register("nsframe-hashing")
class HashingEmbeddings(TextEmbeddingFunction):
    """Each lower-cased word adds +-1 to one of ``dim`` slots (chosen by a hash of the word);
    vectors are unit length, so cosine, dot and l2 rank alike."""

    defaults = {"dim": 64}

    def check_trusted(self) -> None:
        self.ndims()  # a bad dim is refused when the function is made

    def ndims(self) -> int:
        dim = self.params["dim"]
        # Capped: a table's metadata must not make a reader allocate without bound.
        if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= MAX_DIM:
            raise ValueError(f"nsframe-hashing: dim must be an int from 1 to {MAX_DIM}, "
                             f"got {dim!r}.")
        return dim

    def generate_embeddings(self, texts: list[str]) -> Any:
        dim = self.ndims()
        out: Vectors = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(),
                                        "little")
                out[row, digest % dim] += 1.0 if (digest >> 32) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
