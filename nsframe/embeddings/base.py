"""What an embedding function is: the base classes, their errors, and the column pairing.

The shape follows LanceDB's ``lancedb.embeddings.base`` (``create``, ``ndims``,
``compute_source_embeddings``, ``compute_query_embeddings``, ``safe_model_dump``,
``sensitive_keys``), so a function written for one reads the same in the other. Unlike
LanceDB's, these are plain classes (no pydantic): ``create(**params)`` checks the
parameters itself and keeps them exactly as given, which is what goes into a table's
metadata.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nsframe.exceptions import NsframeError

_F = TypeVar("_F", bound="EmbeddingFunction")

# Parameters every LanceDB function takes (accepted, and unused: nsframe does not retry).
LANCEDB_COMMON: dict[str, Any] = {"max_retries": 7}

Vectors = npt.NDArray[np.float32]


class EmbeddingFunctionNotFoundError(NsframeError, LookupError):
    """The table (or the caller) names a function this client has not registered."""


class UntrustedEmbeddingError(NsframeError, PermissionError):
    """A function's parameters would run code, load a model or call an endpoint that the
    reader has not allowed (table metadata is written by whoever could write the table)."""


class EmbeddingError(NsframeError, ValueError):
    """An embedding function returned something unusable, or was used the wrong way."""


class EmbeddingFunction(ABC):
    """Turns values of a source column into vectors.

    Subclass it (or `TextEmbeddingFunction`), give the parameters as class attributes
    with defaults in ``defaults``, and register it with `nsframe.embeddings.register`.
    Always make instances with ``create(**params)``: those parameters are what a table
    stores, and what a reader passes back to ``create`` to rebuild the function.
    """

    #: Parameter names and their defaults; ``create`` refuses any other name.
    defaults: ClassVar[dict[str, Any]] = {}
    #: The name it was registered under (set by the registry).
    registry_name: ClassVar[str | None] = None

    def __init__(self, **params: Any) -> None:
        # LanceDB's base class takes max_retries; a table it wrote may carry it.
        known = {**LANCEDB_COMMON, **self.defaults}
        unknown = sorted(set(params) - set(known))
        if unknown:
            names = ", ".join(sorted(self.defaults)) or "none"
            raise TypeError(f"{type(self).__name__} takes no parameter {unknown[0]!r} "
                            f"(its parameters: {names}).")
        self.params: dict[str, Any] = {**known, **params}
        self._original_args: dict[str, Any] = dict(params)

    @classmethod
    def create(cls: type[_F], **params: Any) -> _F:
        """An instance with these parameters (refused, with the reason, when they
        name a secret or something the reader has not allowed)."""
        for key in cls.sensitive_keys():
            value = params.get(key)
            if value is not None and not (isinstance(value, str) and value.startswith("$var:")):
                raise UntrustedEmbeddingError(
                    f"Parameter {key!r} of {cls.__name__} is a secret and would be stored in "
                    "the table's metadata: leave it out and set the environment variable the "
                    "function reads, or pass \"$var:NAME\" and call "
                    "get_registry().set_var(NAME, value) (as in LanceDB).")
        instance = cls(**params)
        instance.check_trusted()
        return instance

    def check_trusted(self) -> None:
        """Raise `UntrustedEmbeddingError` if the parameters would make this client run
        code, load files or call endpoints it has not allowed. The default allows all."""
        return None

    @staticmethod
    def sensitive_keys() -> list[str]:
        """Parameters that hold secrets and so must never be stored (API keys)."""
        return []

    def safe_model_dump(self) -> dict[str, Any]:
        """The parameters as given to ``create``: the ``model`` part of the metadata."""
        return dict(self._original_args)

    @abstractmethod
    def ndims(self) -> int:
        """The number of dimensions of the vectors."""

    @abstractmethod
    def compute_source_embeddings(self, values: Sequence[Any]) -> Vectors:
        """One vector per value, shape ``(len(values), ndims())``; values are not null."""

    def compute_query_embeddings(self, query: Any) -> Vectors:
        """The vectors of one query (or of a list of queries), one row each."""
        values = [query] if isinstance(query, str) or not isinstance(query, Sequence) \
            else list(query)
        return self.compute_source_embeddings(values)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._original_args.items())
        return f"{self.registry_name or type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmbeddingFunction) and type(other) is type(self) and \
            other.params == self.params

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted((k, repr(v)) for k, v in self.params.items()))))


class TextEmbeddingFunction(EmbeddingFunction):
    """An embedding function over text: implement ``generate_embeddings(texts)``."""

    def compute_source_embeddings(self, values: Sequence[Any]) -> Vectors:
        texts = sanitize_text(values)
        vectors = np.asarray(self.generate_embeddings(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.ndims()):
            raise EmbeddingError(f"{self!r} returned vectors of shape {vectors.shape} for "
                                 f"{len(texts)} texts; expected ({len(texts)}, {self.ndims()}).")
        return vectors

    @abstractmethod
    def generate_embeddings(self, texts: list[str]) -> Any:
        """One vector per text (a 2-D array or a list of lists)."""


def sanitize_text(values: Any) -> list[str]:
    """A list of str from a str, a list, a numpy array or an Arrow array."""
    if isinstance(values, str):
        return [values]
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    texts = list(values)
    for text in texts:
        if not isinstance(text, str):
            raise EmbeddingError(f"A text embedding function embeds strings, got {text!r}.")
    return texts


@dataclass(frozen=True)
class EmbeddingFunctionConfig:
    """A function attached to a table: it fills ``vector_column`` from ``source_column``
    (LanceDB's ``EmbeddingFunctionConfig``, with the same field names)."""

    function: EmbeddingFunction
    source_column: str = "text"
    vector_column: str = "vector"
