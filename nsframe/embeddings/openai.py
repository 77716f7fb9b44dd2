"""``openai``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, a local
Ollama or vLLM, a gateway), over plain HTTP with requests.

Parameters, as LanceDB's ``openai`` function: ``name`` (the model), ``dim`` (asked of
the endpoint as ``dimensions`` when set), ``base_url`` (default OpenAI's), plus
``api_key_env``: the environment variable holding the key (default ``OPENAI_API_KEY``;
another one only if the reader named it in ``allow_endpoint(url, api_key_env=...)``).
The key itself is never a parameter, so never in a table. Any ``base_url`` but OpenAI's
own must be allowed by the reader (`allow_endpoint` or ``NSFRAME_EMBEDDING_ENDPOINTS``):
a table's metadata cannot send a reader's texts, or key, elsewhere.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import requests

from nsframe.embeddings import _trust
from nsframe.embeddings.base import (
    EmbeddingError,
    TextEmbeddingFunction,
    UntrustedEmbeddingError,
)
from nsframe.embeddings.registry import get_registry, register

OPENAI_URL = "https://api.openai.com/v1"
# LanceDB's defaults for OpenAI's own models, used when ``dim`` is not given.
_KNOWN_DIMS = {"text-embedding-ada-002": 1536, "text-embedding-3-small": 1536,
               "text-embedding-3-large": 3072}
TIMEOUT_S = 60.0


@register("openai")
class OpenAIEmbeddings(TextEmbeddingFunction):
    """An OpenAI-compatible embeddings endpoint (see the module docstring)."""

    defaults = {"name": "text-embedding-ada-002", "dim": None, "base_url": None,
                "api_key": None, "api_key_env": "OPENAI_API_KEY", "organization": None,
                "use_azure": False}

    @staticmethod
    def sensitive_keys() -> list[str]:
        return ["api_key"]

    def check_trusted(self) -> None:
        url = self.base_url
        if not url.startswith(("http://", "https://")):
            raise UntrustedEmbeddingError(f"openai: base_url must be an http(s) URL, got "
                                          f"{url!r}.")
        if url.rstrip("/") != OPENAI_URL and not _trust.endpoint_allowed(url):
            raise UntrustedEmbeddingError(
                f"openai: the endpoint {url!r} is not one you allowed, so no text (or key) "
                f"is sent to it. Call nsframe.embeddings.allow_endpoint({url!r}) (or list it "
                f"in {_trust.ENDPOINTS_ENV}) if you trust it.")
        key_env = str(self.params["api_key_env"])
        if not _trust.key_env_allowed(url, key_env):
            raise UntrustedEmbeddingError(
                f"openai: the key would be read from ${key_env}, which you did not name for "
                f"{url!r}: a table cannot choose which of your secrets is sent. Call "
                f"nsframe.embeddings.allow_endpoint({url!r}, api_key_env={key_env!r}) if "
                "that is the key for it.")
        if self.params["use_azure"]:
            raise UntrustedEmbeddingError("openai: use_azure is not supported by nsframe; "
                                          "give the Azure deployment's URL as base_url.")

    @property
    def base_url(self) -> str:
        return str(self.params["base_url"] or OPENAI_URL)

    def ndims(self) -> int:
        dim = self.params["dim"]
        if dim is not None:
            return int(dim)
        if self.params["name"] in _KNOWN_DIMS:
            return _KNOWN_DIMS[self.params["name"]]
        return int(np.asarray(self.generate_embeddings(["dimension probe"])).shape[1])

    def _key(self) -> str | None:
        given = self.params["api_key"]
        if isinstance(given, str) and given.startswith("$var:"):
            return get_registry().get_var(given[5:])
        return os.environ.get(str(self.params["api_key_env"]))

    def generate_embeddings(self, texts: list[str]) -> Any:
        if not texts:
            return np.zeros((0, int(self.params["dim"] or 0)), dtype=np.float32)
        body: dict[str, Any] = {"model": self.params["name"], "input": texts}
        if self.params["dim"] is not None:
            body["dimensions"] = int(self.params["dim"])
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.params["organization"]:
            headers["OpenAI-Organization"] = str(self.params["organization"])
        url = self.base_url.rstrip("/") + "/embeddings"
        try:
            answer = requests.post(url, json=body, headers=headers, timeout=TIMEOUT_S)
        except requests.RequestException as exc:
            raise EmbeddingError(f"openai: could not reach {url}: {exc}") from exc
        if answer.status_code != 200:
            raise EmbeddingError(f"openai: {url} answered {answer.status_code}: "
                                 f"{answer.text[:300]}")
        try:
            items = sorted(answer.json()["data"], key=lambda item: item["index"])
            return np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"openai: {url} answered with no embeddings list "
                                 f"({exc}).") from exc
