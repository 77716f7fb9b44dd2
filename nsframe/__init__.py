"""nsframe: versioned vector tables for people who work in pandas and polars."""

from __future__ import annotations

from nsframe import exceptions
from nsframe._version import __version__
from nsframe.exceptions import APIError, NsframeError

__all__ = ["APIError", "NsframeError", "__version__", "exceptions"]
