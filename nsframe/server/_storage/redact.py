"""Secrets kept out of every text the server shows: error bodies, logs, reprs.

Storage options hold credentials (an S3 secret key, an Azure SAS token). A store's or
Lance's error message could quote one, so every registered secret value is replaced in
error details (`errors.scrub`) and in log records (`SecretFilter`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

MASK = "<secret>"
# Shorter values are not masked: they would blank out ordinary words ("true", "1").
MIN_LENGTH = 6

_secrets: set[str] = set()
_lock = threading.Lock()


def register(values: Iterable[str]) -> None:
    with _lock:
        _secrets.update(v for v in values if len(v) >= MIN_LENGTH)


def secret_values() -> frozenset[str]:
    with _lock:
        return frozenset(_secrets)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``<secret>``."""
    for value in sorted(secret_values(), key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    return text


class SecretFilter(logging.Filter):
    """Masks secrets in a record's message and traceback; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not secret_values():
            return True
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        return True


def install(*loggers: str) -> None:
    """Filter the records the named loggers create (a logger's filters see the records
    logged to it, whichever handlers print them later)."""
    for name in loggers:
        logger = logging.getLogger(name)
        if not any(isinstance(f, SecretFilter) for f in logger.filters):
            logger.addFilter(SecretFilter())
