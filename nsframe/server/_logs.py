"""The server's log lines: each one names the request it was logged for, as text or JSON.

The id of the request being handled lives in a context variable (`current`), set for
the whole request by `_http.request_ids.RequestIds`. Starlette's worker threads
(`anyio.to_thread` runs each call in a copy of the caller's context) and streamed
answers see the same value, so every line logged for a request, on any thread, names
it. `RequestIdFilter` copies it onto each log record as ``record.request_id``: on the
server's own loggers (`install`, for an embedded server whose handlers are the
application's) and on the handlers `nsframe serve` configures (`logging_config`), which
see every record they print, whichever logger made it.

``log_format="text"`` prints ``time logger LEVEL [request id] message``; ``"json"``
prints one JSON object per line: time, level, logger, message, request_id, and for the
access log method, path, status, duration_ms, database, credential and context.
"""

from __future__ import annotations

import copy
import json
import logging
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any, Literal

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import DefaultFormatter

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

# The id of the request this code runs for; None outside a request.
current: ContextVar[str | None] = ContextVar("nsframe_request_id", default=None)

# The loggers the server writes to (uvicorn's included).
SERVER_LOGGERS = ("nsframe", "nsframe.server", "nsframe.server.access",
                  "nsframe.server.workers", "uvicorn", "uvicorn.error", "uvicorn.access")

# Members an access line adds to its JSON object (`_security.access_log` puts them in
# ``record.nsframe``), under the names they have in the object.
ACCESS_FIELDS = {"method": "method", "path": "path", "status": "status",
                 "duration_ms": "duration_ms", "database": "database",
                 "credential": "principal", "context": "context"}


def printable(text: object) -> str:
    """``text`` with every non-printable character escaped, as `repr` escapes them, so
    that text a client sent never starts a line that reads like another log line.

    A backslash is escaped too, so that an escape in the log always means one character
    the client sent, never text the client typed to look like one.
    """
    value = str(text)
    if value.isprintable() and "\\" not in value:
        return value
    # repr() of one non-printable character is its escape in quotes: '\\n', '\\x1b'.
    return "".join(ch if ch.isprintable() and ch != "\\" else repr(ch)[1:-1]
                   for ch in value)


class RequestIdFilter(logging.Filter):
    """Sets ``record.request_id`` to the id of the request being handled (None outside
    one); an id the record carries already stays. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current.get()
        return True


def install() -> None:
    """Put `RequestIdFilter` on the server's loggers (a logger's filters see the records
    logged to it, whichever handlers print them)."""
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RequestIdFilter) for f in logger.filters):
            logger.addFilter(RequestIdFilter())


def _tagged(record: logging.LogRecord) -> None:
    request_id = getattr(record, "request_id", None)
    record.request_tag = f"[{request_id}] " if request_id else ""


class TextFormatter(logging.Formatter):
    """A format with ``%(request_tag)s``: ``[id] `` in a request, nothing outside one."""

    def format(self, record: logging.LogRecord) -> str:
        _tagged(record)
        return super().format(record)


class UvicornTextFormatter(DefaultFormatter):
    """uvicorn's own format (``INFO:     message``), with the request id."""

    def format(self, record: logging.LogRecord) -> str:
        _tagged(record)
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (non-ASCII and control characters are
    escaped by `json.dumps`)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc)
            .isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        fields = getattr(record, "nsframe", None)
        if isinstance(fields, dict):
            line.update({name: fields[key] for name, key in ACCESS_FIELDS.items()
                         if key in fields})
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str)


_TEXT = "%(asctime)s %(name)s %(levelname)s %(request_tag)s%(message)s"


def logging_config(level: str, log_format: str = "text") -> dict[str, Any]:
    """uvicorn's logging, plus our loggers on stderr, every handler adding the request
    id: set up again in every worker (a spawned process inherits no handlers).

    In ``"json"`` every line is JSON: uvicorn's too, other libraries' warnings (through
    the root logger) and Python's warnings (once `capture_warnings` ran in the process).
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log_format is 'text' or 'json', got {log_format!r}")
    settings = copy.deepcopy(LOGGING_CONFIG)
    here = f"{__name__}."
    settings["filters"] = {"request_id": {"()": here + "RequestIdFilter"}}
    if log_format == "json":
        for name in ("default", "access"):
            settings["formatters"][name] = {"()": here + "JsonFormatter"}
        settings["formatters"]["nsframe"] = {"()": here + "JsonFormatter"}
    else:
        # uvicorn's format with the request id before the message (its access log,
        # which `nsframe serve` turns off for ours, keeps its own).
        default = settings["formatters"]["default"]
        default["()"] = here + "UvicornTextFormatter"
        default["fmt"] = default["fmt"].replace("%(message)s", "%(request_tag)s%(message)s")
        settings["formatters"]["nsframe"] = {"()": here + "TextFormatter", "fmt": _TEXT}
    settings["handlers"]["nsframe"] = {
        "formatter": "nsframe", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    for handler in settings["handlers"].values():
        handler["filters"] = ["request_id"]
    settings["loggers"]["nsframe"] = {"handlers": ["nsframe"], "level": level.upper(),
                                      "propagate": False}
    if log_format == "json":
        # Python's warnings (with `logging.captureWarnings`) and other libraries' records
        # would otherwise reach stderr as bare text.
        settings["loggers"]["py.warnings"] = {"handlers": ["nsframe"], "propagate": False}
        settings["root"] = {"handlers": ["nsframe"], "level": "WARNING"}
    return settings


def capture_warnings(log_format: str) -> None:
    """In ``"json"``, Python's warnings become log records (a JSON line each), not bare
    text on stderr; called in each process that logs (the parent and every worker)."""
    if log_format == "json":
        logging.captureWarnings(True)
