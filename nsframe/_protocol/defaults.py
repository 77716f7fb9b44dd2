"""Conventions both sides assume: the main branch, search and listing defaults, the
environment variables that carry credentials and the default storage folder."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# The branch every table has; a request names it with "main", "" or no branch at all.
MAIN_BRANCH = "main"

# Results of a vector or full-text search when the request gives no `k`.
DEFAULT_SEARCH_K = 10

# Every distance spelling the upstream reference accepts, mapped to Lance's metric name.
# The order is the one error messages list them in.
DISTANCE_TYPES: Mapping[str, str] = MappingProxyType({
    "l2": "l2",
    "euclidean": "l2",
    "cosine": "cosine",
    "dot": "dot",
    "inner_product": "dot",
    "hamming": "hamming",
})

# Items per listing page: the server's page when the request sends no `limit`, and the
# most it hands out whatever the `limit`.
MAX_PAGE_SIZE = 1000

# Where `nsframe.connect()` and `nsframe serve` keep their data when told nothing else.
DEFAULT_ROOT = "./nsframe-data"

# The client's credentials and service, read by `nsframe.connect()`.
URL_ENV = "NSFRAME_URL"
API_KEY_ENV = "NSFRAME_API_KEY"
TOKEN_ENV = "NSFRAME_TOKEN"
# The full-access API keys a server accepts (comma-separated), read by `nsframe serve`.
API_KEYS_ENV = "NSFRAME_API_KEYS"


def normalize_branch(branch: str | None) -> str | None:
    """None for the main branch (``None``, ``""`` and ``"main"`` all mean main), else
    the branch name unchanged."""
    if branch is None or branch == "" or branch == MAIN_BRANCH:
        return None
    return branch
