"""The registry: names to embedding function classes, and the table metadata format.

A table's schema metadata holds, under the key ``embedding_functions``, a JSON list of
``{"name", "model", "source_column", "vector_column"}``: the registered name, the
parameters given to ``create``, and the two columns. That is LanceDB's format
(``lancedb.embeddings.registry``), so either tool reads the other's tables.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from nsframe.embeddings.base import (
    EmbeddingFunction,
    EmbeddingFunctionConfig,
    EmbeddingFunctionNotFoundError,
    TextEmbeddingFunction,
)

METADATA_KEY = "embedding_functions"

_C = TypeVar("_C", bound=type[EmbeddingFunction])

# Functions nsframe ships, imported on first use, and what they need installed.
_BUILT_IN = {
    "sentence-transformers": "nsframe.embeddings.sentence_transformers",
    "openai": "nsframe.embeddings.openai",
    "nsframe-hashing": "nsframe.embeddings.hashing",
}
_INSTALL = {
    "sentence-transformers": "pip install 'nsframe[embed]' (with a CPU build of torch on a "
                             "machine without a GPU)",
}


@dataclass(frozen=True)
class EmbeddingSpec:
    """One entry of a table's metadata, not yet turned into a function."""

    name: str
    model: dict[str, Any]
    source_column: str
    vector_column: str

    def config(self) -> EmbeddingFunctionConfig:
        """The function this entry names, built by this client's registry."""
        function = get_registry().get(self.name).create(**self.model)
        return EmbeddingFunctionConfig(function, self.source_column, self.vector_column)


class EmbeddingFunctionRegistry:
    """Embedding function classes by name (LanceDB's ``EmbeddingFunctionRegistry``)."""

    _instance: EmbeddingFunctionRegistry | None = None

    def __init__(self) -> None:
        self._functions: dict[str, type[EmbeddingFunction]] = {}
        self._variables: dict[str, str] = {}

    @classmethod
    def get_instance(cls) -> EmbeddingFunctionRegistry:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def register(self, alias: str | None = None) -> Callable[[_C], _C]:
        """A class decorator: register the class under ``alias`` (else its name).

        Registering a name again replaces the earlier class, in this process only.
        """
        def decorator(cls: _C) -> _C:
            if not (isinstance(cls, type) and issubclass(cls, EmbeddingFunction)):
                raise TypeError("register() decorates a subclass of EmbeddingFunction.")
            key = alias or cls.__name__
            self._functions[key] = cls
            cls.registry_name = key
            return cls
        return decorator

    def get(self, name: str) -> type[EmbeddingFunction]:
        """The class registered as ``name``.

        Raises:
            EmbeddingFunctionNotFoundError: no such name here; the message says what to
                install or register.
        """
        if name not in self._functions and name in _BUILT_IN:
            module = importlib.import_module(_BUILT_IN[name])
            if name not in self._functions:  # imported before a reset(): register again
                importlib.reload(module)
        if name in self._functions:
            return self._functions[name]
        known = ", ".join(sorted(set(self._functions) | set(_BUILT_IN)))
        raise EmbeddingFunctionNotFoundError(
            f"No embedding function named {name!r} is registered in this client (known: "
            f"{known}). If the table was made with a function of your own, register the "
            f"same one here first: nsframe.embeddings.register_callable({name!r}, fn, "
            f"ndims=...) or @nsframe.embeddings.register({name!r}) on a class.")

    def names(self) -> list[str]:
        """Every name this registry can build (registered or shipped with nsframe)."""
        return sorted(set(self._functions) | set(_BUILT_IN))

    def reset(self) -> None:
        """Forget every registered class (the shipped ones come back on first use)."""
        self._functions.clear()

    # ------------------------------------------------------------------ metadata
    def function_to_metadata(self, conf: EmbeddingFunctionConfig) -> dict[str, Any]:
        """One ``embedding_functions`` entry for ``conf``."""
        name = type(conf.function).registry_name
        if name is None:
            raise TypeError(f"{type(conf.function).__name__} is not registered: decorate it "
                            "with @nsframe.embeddings.register(name) before using it.")
        return {"name": name, "model": conf.function.safe_model_dump(),
                "source_column": conf.source_column, "vector_column": conf.vector_column}

    def get_table_metadata(self, configs: Sequence[EmbeddingFunctionConfig]
                           ) -> dict[str, bytes] | None:
        """The schema metadata that records ``configs`` (None for none)."""
        if not configs:
            return None
        entries = [self.function_to_metadata(c) for c in configs]
        return {METADATA_KEY: json.dumps(entries, indent=2).encode("utf-8")}

    def parse_functions(self, metadata: Mapping[Any, Any] | None
                        ) -> dict[str, EmbeddingFunctionConfig]:
        """Vector column -> the function that fills it, built from schema metadata."""
        return {s.vector_column: s.config() for s in read_specs(metadata)}

    # ------------------------------------------------------------------ variables
    def set_var(self, name: str, value: str) -> None:
        """A value for ``"$var:name"`` in a function's parameters (kept in this process
        only, never in a table: the way to give a secret, as in LanceDB)."""
        if ":" in name:
            raise ValueError("Variable names cannot contain colons.")
        self._variables[name] = value

    def get_var(self, name: str) -> str:
        if name not in self._variables:
            raise KeyError(f"Variable {name!r} is not set: call "
                           f"get_registry().set_var({name!r}, value) first.")
        return self._variables[name]


def read_specs(metadata: Mapping[Any, Any] | None) -> list[EmbeddingSpec]:
    """The entries of a schema's ``embedding_functions`` metadata (none when absent)."""
    if not metadata:
        return []
    raw = metadata.get(METADATA_KEY.encode(), metadata.get(METADATA_KEY))
    if raw is None:
        return []
    try:
        entries = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        return [EmbeddingSpec(str(e["name"]), dict(e.get("model") or {}),
                              str(e["source_column"]), str(e["vector_column"]))
                for e in entries]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"The table's {METADATA_KEY!r} metadata is not a JSON list of "
                         "{name, model, source_column, vector_column}: "
                         f"{exc}") from exc


def install_hint(name: str) -> str | None:
    """What to install for a shipped function whose libraries are missing."""
    return _INSTALL.get(name)


def get_registry() -> EmbeddingFunctionRegistry:
    """The registry of this process (LanceDB's ``get_registry``)."""
    return EmbeddingFunctionRegistry.get_instance()


def register(name: str | None = None) -> Callable[[_C], _C]:
    """Class decorator registering an embedding function under ``name``."""
    return get_registry().register(name)


def register_callable(name: str, fn: Callable[[list[str]], Any], *, ndims: int
                      ) -> type[TextEmbeddingFunction]:
    """Register a plain callable ``fn(list_of_texts) -> vectors`` as the text embedding
    function ``name`` with ``ndims`` dimensions, in this process.

    A table records only the name: every client that searches it registers its own
    callable under the same name (nothing in a table can choose the code).
    """
    if not callable(fn):
        raise TypeError(f"register_callable() needs a callable, got {fn!r}.")
    if not isinstance(ndims, int) or isinstance(ndims, bool) or ndims <= 0:
        raise ValueError(f"ndims must be a positive int, got {ndims!r}.")
    dims = ndims

    class CallableEmbeddings(TextEmbeddingFunction):
        __doc__ = f"The callable {getattr(fn, '__qualname__', fn)!r}, registered as {name!r}."

        def ndims(self) -> int:
            return dims

        def generate_embeddings(self, texts: list[str]) -> Any:
            return fn(texts)

    CallableEmbeddings.__name__ = CallableEmbeddings.__qualname__ = f"Callable[{name}]"
    return get_registry().register(name)(CallableEmbeddings)
