"""Storage failures mapped to the contract: Lance and pyarrow exceptions become the
`nsframe.exceptions` class they mean, with every file path scrubbed from the detail.
"""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from nsframe._protocol.hints import missing_column
from nsframe.exceptions import (
    APIError,
    BranchAlreadyExistsError,
    BranchNotFoundError,
    ConcurrentModificationError,
    IndexAlreadyExistsError,
    InvalidInputError,
    SchemaMismatchError,
    ServerError,
    ServiceUnavailableError,
    StorageFullError,
    TableAlreadyExistsError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from nsframe.server._storage import redact
from nsframe.server._storage.metrics import TABLE_CONFLICT

log = logging.getLogger("nsframe.server")

# ", /home/runner/work/lance/lance/rust/...rs:12:34" and any other absolute path.
_RUST_LOCATION = re.compile(r",?\s*(location:\s*)?/\S+?\.rs:\d+:\d+")
_ABS_PATH = re.compile(r"(?:file://)?(?<![\w.])/(?:[^\s,:'\"]+/)+[^\s,:'\"]*")
# s3://bucket/..., s3+ddb://...?ddbTableName=x, http://endpoint/...: where data lives.
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.I)
_PY_TRACEBACK = re.compile(r"Detail: Python exception: Traceback.*", re.S)
_TRANSIENT = re.compile(r"timed? ?out|connection (reset|refused|closed)|slow ?down|"
                        r"temporarily unavailable|too many requests|service unavailable|"
                        r"status:? 503")
# ENOSPC (os error 28) and EDQUOT (122) as Lance, obstore and Python word them.
_FULL = re.compile(r"no space left on device|os error (28|122)\b|storagefull|"
                   r"disk quota exceeded|errno 28\b|errno 122\b")
# Arrow compute errors of a user's expression evaluated over the rows.
_EVALUATION = re.compile(r"divide by zero|cast error|arithmetic overflow|overflow error")
# DataFusion's own "Execution error" inside Lance's (a function's arguments, as in
# `array_concat()` or `named_struct(NULL)`): never a storage failure, which is an IO or
# external error there.
_EXPRESSION_FAILED = re.compile(r"query execution error: (?:error applying filter "
                                r"expression to batch: )?execution error: ")
# A panic in one of Lance's own threads, as the caller's thread is told of it.
_ABORTED = re.compile(r"task was aborted", re.IGNORECASE)
_FIELD_NOT_FOUND = re.compile(r"^(?:LanceError\(\w+\):\s*)?Field '([^']*)' not found\.(?:\n|$)")
_LANCE_KIND = re.compile(r"^LanceError\(\w+\):\s*")
# DataFusion's unknown column: "No field named nmae. Did you mean 'name'?" or "No field
# named zz. Valid fields are id, name, _rowid, ...".
_NO_FIELD = re.compile(r"No field named (.+?)\.(?: Did you mean '([^']*)'\?| Valid fields "
                       r"are (.*?)\.(?:,|$)|,|$)", re.S)
# A storage file missing under a table (its path names the dataset's own folders).
_GONE = re.compile(r"(not found|no such file).*(\.lance|_versions|/data/|\.manifest)", re.S)


# The detail of every 500: what failed is in the server's log, never in the answer.
UNEXPECTED = "The server failed unexpectedly; the failure is in its log."


def unexpected(exc: BaseException, where: str = "") -> ServerError:
    """The 500 for a failure we did not foresee: logged in full here, opaque to clients."""
    log.error("unexpected error%s", f" {where}" if where else "", exc_info=exc)
    return ServerError(UNEXPECTED)


def is_full(exc: BaseException) -> bool:
    """True when ``exc`` says the store has no room left (a full disk, a quota)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return bool(_FULL.search(str(exc).lower()))


def storage_full(exc: BaseException) -> StorageFullError:
    """The 507 for a write the store had no room for; the operator learns it from the log."""
    log.error("the store is full, a write was refused: %s", scrub(str(exc)))
    return StorageFullError(
        "The server's storage is full, so nothing was written: retry once space has been "
        "freed on it."
    )


@contextmanager
def full_store() -> Iterator[None]:
    """A write inside the block that finds no room left is a 507, not a 500."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, APIError) or not is_full(exc):
            raise
        raise storage_full(exc) from exc


def scrub(message: str) -> str:
    """Remove secrets, file paths, storage URLs and source locations from a message meant
    for a client."""
    message = redact.redact(message)
    message = _PY_TRACEBACK.sub("", message)
    message = _RUST_LOCATION.sub("", message)
    message = _URL.sub("<location>", message)
    message = _ABS_PATH.sub("<path>", message)
    return message.strip().rstrip(",").strip()


def _first_line(text: str) -> str:
    """Lance follows some messages with a dump of the whole schema."""
    return text.split("\n", 1)[0].rstrip(" :")


def translate(exc: BaseException, columns: Sequence[str] | None = None) -> APIError:
    """The contract's error for an exception raised by Lance or pyarrow.

    ``columns``, the table's, lets an unknown column's detail list them.
    """
    if isinstance(exc, APIError):
        return exc
    text = str(exc)
    lowered = text.lower()
    detail = scrub(text)
    panic = is_panic(exc)
    if panic or _ABORTED.fullmatch(text):
        # Lance's planner indexes arguments it has not checked: get_field() with none,
        # CAST(x AS DECIMAL(76, 0)). Only the request's expressions reach it, so the
        # fault is theirs. A panic in Lance's own threads reaches us as "Task was aborted".
        what = (detail.splitlines() or ["a panic"])[0] if panic \
            else "a panic in one of its threads"
        return InvalidInputError(
            f"Lance failed inside its engine on this request ({what}). "
            "It does so for some expressions it does not check: a function given the "
            "wrong number or kind of arguments (`get_field()`), or a cast it cannot "
            "make. Check the functions and casts of the filter or columns."
        )
    if is_full(exc):
        return storage_full(exc)
    if "ref not found" in lowered or ("does not exist" in lowered and "tag" in lowered):
        if "branch" in lowered:
            return BranchNotFoundError(detail)
        return TagNotFoundError(detail)
    if "ref conflict" in lowered or "already exists" in lowered:
        if lowered.startswith("lanceerror(index): index name"):
            # "Index name 'x' already exists[ with different fields]": first, as the
            # name itself may hold "branch" or "tag".
            return IndexAlreadyExistsError(detail)
        if "branch" in lowered:
            return BranchAlreadyExistsError(detail)
        if "tag" in lowered:
            return TagAlreadyExistsError(detail)
        if "dataset already exists" in lowered:
            # Another request created the table between our check and our write.
            return TableAlreadyExistsError(
                "The table was created by another request at the same time: open it, or "
                "create with mode exist_ok or overwrite."
            )
    if "incompatible transaction" in lowered or "incompatible with concurrent" in lowered:
        TABLE_CONFLICT.inc()
        return ConcurrentModificationError(
            f"Another write to this table committed first ({detail}): retry the request."
        )
    if "too many concurrent writers" in lowered:
        # A merge on the key lost Lance's commit race more often than it retries: busy.
        TABLE_CONFLICT.inc()
        return ServiceUnavailableError(
            "Too many writes to this table at once; nothing was changed: retry shortly.",
            headers={"Retry-After": "1"},
        )
    if "primary key column" in lowered:
        # Lance's rules for key fields ("must not be nullable", "must be a leaf").
        return InvalidInputError(f"The primary key is not valid: {detail}")
    if isinstance(exc, OSError) and _TRANSIENT.search(lowered):
        log.warning("storage did not answer in time: %s", detail)
        # The store is overloaded or out of reach for a moment: nothing was committed.
        return ServiceUnavailableError(
            "The storage did not answer in time; nothing was changed: retry shortly.",
            headers={"Retry-After": "1"},
        )
    if _GONE.search(lowered):
        # A file the table referenced a moment ago is gone: the table was dropped, or
        # cleaned up, while this request read it. Never the caller's input error.
        return ConcurrentModificationError(
            "The table changed while this request read it (it was dropped or cleaned up "
            "meanwhile): retry the request."
        )
    if "conflict" in lowered and ("commit" in lowered or "transaction" in lowered):
        TABLE_CONFLICT.inc()
        return ConcurrentModificationError(
            f"Another write to this table committed first ({detail}): retry the request."
        )
    if "levenshtein automaton exceeds" in lowered:
        # An FTS index matches fuzzily through an automaton of bounded size, which a long
        # word at 2 edits (about 45 letters) outgrows: the request asks too much of it.
        return InvalidInputError(
            "A word of the full-text query is too long to match fuzzily with the index at "
            "this fuzziness: send fuzziness 1 or 0 for it."
        )
    if _EVALUATION.search(lowered):
        # A valid expression that fails on the rows it reads (`id / 0`, a string that is
        # no number): the caller's expression or data, not the server.
        return InvalidInputError(
            f"An expression failed on the table's rows ({_LANCE_KIND.sub('', detail)}): "
            "change the expression, "
            "or the rows it applies to."
        )
    if "cannot contain `.`" in lowered:
        return InvalidInputError(
            f"{detail}: a column name may not hold '.', which separates the fields of a "
            "path; choose another name."
        )
    if "duplicate field name" in lowered:
        return SchemaMismatchError(
            f"{_first_line(detail)}: the change would give two columns one name; choose "
            "another name."
        )
    if "no field named" in lowered or _FIELD_NOT_FOUND.search(text):
        # DataFusion calls an unknown column in a filter a "Schema error"; it is the
        # expression that is wrong, not the data, so InvalidInput rather than code 20.
        return InvalidInputError(_unknown_column(text, columns) or detail)
    if (
        "different schema" in lowered
        or "schema error" in lowered
        or "schema mismatch" in lowered
        or "marked non-null" in lowered  # nulls sent for a non-nullable column
        or "non-nullable but contains null" in lowered  # the same, said by Lance 14
    ):
        return SchemaMismatchError(detail)
    if (
        "invalid user input" in lowered
        or "sql parser error" in lowered
        or "error parsing" in lowered
        or "no field named" in lowered
        or "not found in schema" in lowered
        or "invalid input" in lowered
        # What Lance's planner cannot make of an expression: `[]`, `count(1) > 0`,
        # `CAST(ts AS BOOLEAN)` (the read routes got ValueErrors for them; deletes OSErrors).
        or "compute error" in lowered
        or "this feature is not implemented" in lowered
        or "error during planning" in lowered  # `rtrim(a, b, c, d)`, in add_columns
        or "failed to coerce types" in lowered
        or "invalid argument error" in lowered  # Arrow's: `CAST(x AS DECIMAL(76, 0))`
        or _EXPRESSION_FAILED.search(lowered)
        or isinstance(exc, (ValueError, TypeError))
    ):
        return InvalidInputError(detail)
    return unexpected(exc)


def _unknown_column(text: str, columns: Sequence[str] | None) -> str | None:
    """The same detail as every other unknown column's, from DataFusion's message or
    Lance's (add_columns says "Field 'x' not found.")."""
    found = _NO_FIELD.search(text) or _FIELD_NOT_FOUND.search(text)
    if found is None:
        return None
    name: str = found.group(1)
    meant, valid = (*found.groups()[1:], None, None)[:2]
    if columns is None and valid:
        columns = [c for c in valid.split(", ") if not c.startswith("_row")]
    if columns:
        return missing_column(name, list(columns))
    return f"The column {name} is not in the table." + (f" Did you mean {meant!r}?"
                                                        if meant else "")


def is_panic(exc: BaseException) -> bool:
    """A Rust panic raised through pyo3 (``pyo3_runtime.PanicException``): a
    BaseException, so an ``except Exception`` lets it through to the server."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


def answerable(exc: BaseException) -> bool:
    """Whether the server answers ``exc``: any Exception, and a Rust panic. Other
    BaseExceptions (cancellation, KeyboardInterrupt) propagate: the server is shutting
    down, or the task was cancelled because the client is gone."""
    return isinstance(exc, Exception) or is_panic(exc)


@contextmanager
def lance_errors(context: str = "",
                 columns: Sequence[str] | Callable[[], Sequence[str]] | None = None
                 ) -> Iterator[None]:
    """Translate Lance/pyarrow errors raised inside the block into contract errors.

    ``columns`` (the table's, or the call that lists them: only an error needs them)
    makes an unknown column's detail list them.
    """
    try:
        yield
    except APIError:
        raise
    except BaseException as exc:
        if not answerable(exc):
            raise
        error = translate(exc, columns() if callable(columns) else columns)
        # The context names what the caller got wrong, so it only prefixes input errors.
        if context and isinstance(error, InvalidInputError):
            error.detail = f"{context}: {error.detail}"
            error.args = (error.detail,)
        raise error from exc
