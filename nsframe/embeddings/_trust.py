"""What this reader allows a table's metadata to make it do.

A table's ``embedding_functions`` metadata is written by whoever could write the table. A
reader that searches the table builds the function it names, so the metadata must never
choose code, model files or endpoints for the reader: those come from the reader alone,
through the calls below or environment variables the reader sets.
"""

from __future__ import annotations

import os
from pathlib import Path

ENDPOINTS_ENV = "NSFRAME_EMBEDDING_ENDPOINTS"
MODELS_ENV = "NSFRAME_EMBEDDING_MODELS"
REMOTE_CODE_ENV = "NSFRAME_EMBEDDING_TRUST_REMOTE_CODE"

_endpoints: set[str] = set()
# Environment variables the reader lets a function read a key from, by endpoint.
_key_envs: dict[str, set[str]] = {}
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_models: dict[str, str] = {}
_remote_code = False


def _normal_url(url: str) -> str:
    return url.strip().rstrip("/")


def allow_endpoint(url: str, *, api_key_env: str | None = None) -> None:
    """Let embedding functions send text to ``url`` (and the paths under it), with the
    key from ``OPENAI_API_KEY`` or, if named, from ``api_key_env``."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"allow_endpoint() takes an http(s) URL, got {url!r}.")
    _endpoints.add(_normal_url(url))
    if api_key_env is not None:
        _key_envs.setdefault(_normal_url(url), set()).add(api_key_env)


def key_env_allowed(url: str, name: str) -> bool:
    """Whether a function sending to ``url`` may read its key from variable ``name``:
    a table's metadata must not pick which of the reader's secrets is sent."""
    if name == DEFAULT_KEY_ENV:
        return True
    wanted = _normal_url(url)
    return any(name in names and (wanted == allowed or wanted.startswith(allowed + "/"))
               for allowed, names in _key_envs.items())


def allowed_endpoints() -> set[str]:
    """The endpoints allowed by `allow_endpoint` and by ``NSFRAME_EMBEDDING_ENDPOINTS``
    (comma-separated URLs)."""
    from_env = {_normal_url(u) for u in os.environ.get(ENDPOINTS_ENV, "").split(",") if u.strip()}
    return _endpoints | from_env


def endpoint_allowed(url: str) -> bool:
    wanted = _normal_url(url)
    return any(wanted == allowed or wanted.startswith(allowed + "/")
               for allowed in allowed_endpoints())


def allow_model(name: str, path: str | os.PathLike[str] | None = None) -> None:
    """Let sentence-transformers functions load model ``name`` (from the folder ``path``,
    or, without it, ``name`` is itself a local folder)."""
    folder = Path(path if path is not None else name).expanduser()
    if not folder.is_dir():
        raise ValueError(f"allow_model({name!r}): {str(folder)!r} is not a folder holding a "
                         "model; nothing is downloaded, so the model must be on disk.")
    _models[str(name)] = str(folder.resolve())


def allowed_models() -> dict[str, str]:
    """Model name -> folder, from `allow_model` and ``NSFRAME_EMBEDDING_MODELS``
    (comma-separated ``name=folder`` or plain folders)."""
    found = dict(_models)
    for item in os.environ.get(MODELS_ENV, "").split(","):
        if not item.strip():
            continue
        name, _, folder = item.partition("=")
        found[name.strip()] = str(Path((folder or name).strip()).expanduser().resolve())
    return found


def allow_remote_code(enabled: bool = True) -> None:
    """Let a table's metadata turn on ``trust_remote_code`` (code shipped with a model)."""
    global _remote_code
    _remote_code = bool(enabled)


def remote_code_allowed() -> bool:
    return _remote_code or os.environ.get(REMOTE_CODE_ENV, "") in ("1", "true", "yes")


def reset() -> None:
    """Forget what was allowed by calls (the environment variables still count)."""
    global _remote_code
    _endpoints.clear()
    _key_envs.clear()
    _models.clear()
    _remote_code = False
