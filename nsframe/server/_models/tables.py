"""Table operations: create, declare, list, describe, count, stats, insert, delete, optimize.

Create and insert carry an Arrow stream, so their members are query parameters; so are a
listing's, and a GET's on count_rows and stats.
"""

from __future__ import annotations

from typing import Any

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.expressions import Sql
from nsframe.server._http.fields import Choice, Count, Positive
from nsframe.server._http.pagination import PageRequest
from nsframe.server._http.validation import Envelope
from nsframe.server._models.namespaces import CreateMode


class InsertMode(Choice):
    CHOICES = ("Append", "Overwrite")
    DEFAULT = "Append"


class CreateTableRequest(Envelope, kw_only=True):
    mode: CreateMode = CreateMode.default()
    # A JSON object of strings, as the query parameter's text.
    properties: dict[str, str] | None = None
    # nsframe's: the key column(s), repeated or comma-separated, as merge_insert's `on`
    # (upstream has no member: its clients send the key as Arrow field metadata).
    primary_key: str | None = None

    QUERY = ("mode", "properties", "primary_key")


class InsertRequest(Envelope, kw_only=True):
    mode: InsertMode = InsertMode.default()
    branch: str | None = None

    QUERY = ("mode", "branch")


class DeclareTableRequest(Envelope, kw_only=True):
    # Values of any type, each stored as its string, as declare always took them.
    properties: dict[str, Any] | None = None


class ListTablesRequest(PageRequest, kw_only=True):
    include_declared: bool = True

    QUERY = (*PageRequest.QUERY, "include_declared")


class DescribeTableRequest(Envelope, kw_only=True):
    version: Count | None = None
    branch: str | None = None


class CountRowsRequest(Envelope, kw_only=True):
    # Upstream's name is predicate; filter is LanceDB's.
    predicate: Sql | None = None
    filter: Sql | None = None
    version: Count | None = None
    branch: str | None = None

    QUERY = ("predicate", "filter", "version", "branch")

    @property
    def condition(self) -> str | None:
        return self.predicate or self.filter or None


class TableStatsRequest(Envelope, kw_only=True):
    branch: str | None = None

    QUERY = ("branch",)


class DeleteRequest(Envelope, kw_only=True):
    predicate: Sql | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        if self.predicate is None or not self.predicate.strip():
            raise InvalidInputError(
                "The member 'predicate' is required: give a SQL condition such as \"id = 3\". "
                "To delete every row, send \"true\"."
            )


class OptimizeRequest(Envelope, kw_only=True):
    branch: str | None = None
    target_rows_per_fragment: Positive | None = None
    optimize_indices: bool | None = None
