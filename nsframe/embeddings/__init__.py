"""Embedding functions: a table that remembers how its text becomes vectors.

Attach a function to a table when you create it; then inserts without vectors get them
filled in, and ``tbl.search("a question")`` searches by meaning. The function is recorded
in the table's schema metadata in LanceDB's format, so LanceDB reads it too.

Example:
    >>> import nsframe, tempfile
    >>> from nsframe.embeddings import get_registry
    >>> func = get_registry().get("nsframe-hashing").create(dim=32)
    >>> conn = nsframe.connect(tempfile.mkdtemp())
    >>> tbl = conn.create_table("docs", {"text": ["red apple", "blue sky"]}, embedding=func)
    >>> tbl.search("apple").limit(1).to_list()[0]["text"]
    'red apple'

Shipped: ``sentence-transformers`` (the packaged all-MiniLM-L6-v2, ``nsframe[embed]``),
``openai`` (any OpenAI-compatible endpoint) and ``nsframe-hashing`` (a model-free
bag of words, for trying things out). See docs/embeddings.md.
"""

from __future__ import annotations

from nsframe.embeddings._trust import (
    allow_endpoint,
    allow_model,
    allow_remote_code,
    allowed_endpoints,
    allowed_models,
)
from nsframe.embeddings.base import (
    EmbeddingError,
    EmbeddingFunction,
    EmbeddingFunctionConfig,
    EmbeddingFunctionNotFoundError,
    TextEmbeddingFunction,
    UntrustedEmbeddingError,
)
from nsframe.embeddings.registry import (
    METADATA_KEY,
    EmbeddingFunctionRegistry,
    EmbeddingSpec,
    get_registry,
    read_specs,
    register,
    register_callable,
)

__all__ = [
    "METADATA_KEY",
    "EmbeddingError",
    "EmbeddingFunction",
    "EmbeddingFunctionConfig",
    "EmbeddingFunctionNotFoundError",
    "EmbeddingFunctionRegistry",
    "EmbeddingSpec",
    "TextEmbeddingFunction",
    "UntrustedEmbeddingError",
    "allow_endpoint",
    "allow_model",
    "allow_remote_code",
    "allowed_endpoints",
    "allowed_models",
    "get_registry",
    "read_specs",
    "register",
    "register_callable",
]
