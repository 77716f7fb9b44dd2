"""Reading and checking request input: JSON bodies, typed members and mode strings.

Every helper raises `InvalidInputError` with a detail that names the member and says
what to send instead, so a client mistake is a 400 and never a 500.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

from starlette.requests import Request

from nsframe.exceptions import InvalidInputError, PayloadTooLargeError

T = TypeVar("T")

DEFAULT_JSON_LIMIT = 16 * 1024 * 1024
# A JSON escape of a UTF-16 surrogate; may also match an escaped backslash before
# "ud8..", which only costs the full check.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# Every integer the contract has (versions, counts, limits) is an int64.
MAX_INT64 = 2**63 - 1


async def read_json(request: Request, *, limit: int | None = None) -> dict[str, Any]:
    """The JSON object body of ``request``; an empty body is ``{}``."""
    if limit is None:
        limit = int(getattr(request.app.state, "max_json_bytes", DEFAULT_JSON_LIMIT))
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"The JSON body is {int(declared)} bytes; this server accepts at most {limit}."
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"The JSON body is larger than {limit} bytes.")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"The body is not valid JSON: {exc}. Send a JSON object.") from exc
    except RecursionError as exc:
        raise InvalidInputError(
            "The JSON body nests too deeply to read: flatten it."
        ) from exc
    if not isinstance(body, dict):
        raise InvalidInputError(
            f"The body must be a JSON object, got {type(body).__name__}: wrap members in {{}}."
        )
    try:
        # JSON may spell lone surrogates ("\\ud800"); such text can be neither stored
        # nor sent back, so refuse it here rather than fail later. An ASCII body can only
        # spell one as a \\uD800-\\uDFFF escape, so most bodies skip re-encoding the
        # whole body (0.15 ms for a 128-d query vector).
        if not raw.isascii() or _SURROGATE_ESCAPE.search(raw):
            json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            "The body holds a lone UTF-16 surrogate (\\ud800-\\udfff) in a string: send "
            "valid Unicode."
        ) from exc
    return body


def _typename(value: object) -> str:
    return "null" if value is None else type(value).__name__


def get_str(
    body: dict[str, Any], key: str, *, required: bool = False, min_length: int = 0
) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidInputError(f"The member {key!r} is required: give it as a string.")
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"The member {key!r} must be a string, got {_typename(value)}.")
    if len(value) < min_length:
        raise InvalidInputError(f"The member {key!r} must not be empty.")
    return value


def get_int(
    body: dict[str, Any], key: str, *, required: bool = False, minimum: int | None = 0
) -> int | None:
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidInputError(f"The member {key!r} is required: give it as an integer.")
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"The member {key!r} must be an integer, got {_typename(value)}.")
    if minimum is not None and value < minimum:
        raise InvalidInputError(f"The member {key!r} must be >= {minimum}, got {value}.")
    if value > MAX_INT64:
        raise InvalidInputError(f"The member {key!r} must be at most {MAX_INT64}, got {value}.")
    return value


def get_float(body: dict[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"The member {key!r} must be a finite number, got {value!r}.")
    return float(value)


def get_bool(body: dict[str, Any], key: str) -> bool | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInputError(f"The member {key!r} must be true or false, got {value!r}.")
    return value


def get_dict(body: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"The member {key!r} must be a JSON object, got {_typename(value)}."
        )
    return value


def get_str_map(body: dict[str, Any], key: str) -> dict[str, str] | None:
    value = get_dict(body, key)
    if value is None:
        return None
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidInputError(
                f"The member {key!r} maps strings to strings; {k!r} maps to {_typename(v)}."
            )
    return value


def query_int(params: Any, key: str, *, minimum: int = 0) -> int | None:
    """An integer query-string parameter."""
    raw = params.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInputError(
            f"The query parameter {key!r} must be an integer, got {raw!r}."
        ) from exc
    if value < minimum:
        raise InvalidInputError(f"The query parameter {key!r} must be >= {minimum}, got {value}.")
    if value > MAX_INT64:
        raise InvalidInputError(
            f"The query parameter {key!r} must be at most {MAX_INT64}, got {value}."
        )
    return value


def query_bool(params: Any, key: str, default: bool) -> bool:
    raw = params.get(key)
    if raw is None or raw == "":
        return default
    lowered = str(raw).lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InvalidInputError(f"The query parameter {key!r} must be true or false, got {raw!r}.")


def normalize_choice(value: object, key: str, choices: tuple[str, ...], default: str) -> str:
    """Map a mode or behavior to one of ``choices`` (PascalCase names).

    Case-insensitive, PascalCase or snake_case: `ExistOk`, `exist_ok`, `EXISTOK`.
    """
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise InvalidInputError(f"{key} must be a string, one of {', '.join(choices)}.")
    wanted = value.replace("_", "").replace("-", "").lower()
    for choice in choices:
        if choice.lower() == wanted:
            return choice
    raise InvalidInputError(
        f"{key} {value!r} is not known: use one of {', '.join(choices)} (any case, "
        "PascalCase or snake_case)."
    )


def whole_condition(predicate: str, what: str = "predicate") -> str:
    """``predicate`` wrapped so that Lance must parse all of it.

    Lance's SQL parser stops after the first complete expression and ignores the rest,
    so ``id = 1 AMD name = 'x'`` (a typo) would silently mean ``id = 1``. In parentheses,
    trailing text is a syntax error instead. A newline ends a trailing ``--`` comment; it
    is added only when one may be there, since Lance records the predicate as sent.
    A ``)`` that closes nothing is refused first: wrapped, ``id = 1) OR (true`` would
    become a valid condition the client never wrote.
    """
    if _closes_unopened(predicate):
        raise InvalidInputError(
            f"The {what} {predicate!r} has a ')' without a matching '(': check its "
            "parentheses."
        )
    return f"({predicate}\n)" if "--" in predicate else f"({predicate})"


def _closes_unopened(sql: str) -> bool:
    """True if a ')' outside quotes and comments closes no '('."""
    depth = 0
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch in "'\"`":
            # Quoted text or identifier; a doubled quote inside is an escaped quote.
            end = i + 1
            while end < len(sql):
                if sql[end] == ch:
                    if sql[end + 1: end + 2] == ch:
                        end += 2
                        continue
                    break
                end += 1
            i = end + 1
            continue
        if sql.startswith("--", i):
            newline = sql.find("\n", i)
            i = len(sql) if newline < 0 else newline + 1
            continue
        if sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            i = len(sql) if close < 0 else close + 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return True
        i += 1
    return False
