"""Storage failures as the client sees them: never a 400, never a path, 503 when passing."""

from __future__ import annotations

import pytest

from nsframe.exceptions import (
    ConcurrentModificationError,
    ServiceUnavailableError,
    StorageFullError,
)
from nsframe.server._storage.errors import translate

PATH = "/srv/data/tables/orders-5f0c2a9e41d7b6a3.lance"


@pytest.mark.parametrize("message", [
    "Generic S3 error: Error performing GET: request timed out",
    "Generic S3 error: Client error with status 503 Service Unavailable: SlowDown",
    "Io error: connection reset by peer",
])
def test_a_passing_store_failure_is_503_with_retry_after(message: str) -> None:
    error = translate(OSError(f"LanceError(IO): {message}, {PATH}/_versions/1.manifest"))
    assert isinstance(error, ServiceUnavailableError)
    assert error.status == 503 and error.headers["Retry-After"] == "1"
    assert "/srv" not in error.detail and "retry" in error.detail


@pytest.mark.parametrize("exc", [
    OSError(f"LanceError(IO): Not found: {PATH}/_versions, rust/lance-table/src/io/commit.rs:1:2"),
    ValueError(f"LanceError(IO): Not found: {PATH}/data/0a1b.lance"),
    OSError(f"No such file or directory (os error 2): {PATH}/_versions/3.manifest"),
    # A version number is no HTTP status: an append that lost to a restore is a conflict.
    OSError("Incompatible transaction: This Append transaction is incompatible with "
            "concurrent transaction Restore at version 503."),
])
def test_a_file_gone_under_a_table_is_a_conflict_not_a_400(exc: Exception) -> None:
    error = translate(exc)
    assert isinstance(error, ConcurrentModificationError)
    assert error.status == 409
    assert "/srv" not in error.detail and ".lance" not in error.detail


@pytest.mark.parametrize("exc", [
    OSError(f"LanceError(IO): No space left on device (os error 28), {PATH}/data/x.lance"),
    OSError(28, "No space left on device"),
    RuntimeError("Generic LocalFileSystem error: Unable to copy data to file: No space left "
                 "on device (os error 28)"),
    OSError(122, "Disk quota exceeded"),
])
def test_a_full_store_is_507_without_a_path(exc: Exception) -> None:
    error = translate(exc)
    assert isinstance(error, StorageFullError)
    assert error.status == 507 and error.to_body()["type"] == "/errors/insufficient-storage"
    assert "full" in error.detail and "/srv" not in error.detail
