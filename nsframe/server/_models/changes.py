"""Writes that change rows or columns in place: merge_insert, update, add/alter/drop columns,
schema metadata.

merge_insert carries an Arrow stream, so its members are query parameters (upstream's
MergeInsertIntoTable); the others take JSON bodies (UpdateTable, AlterTableAddColumns,
AlterTableAlterColumns, AlterTableDropColumns). The schema metadata update's body is a
bare map, read by its handler.
"""

from __future__ import annotations

from typing import Any

import msgspec

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.expressions import Sql
from nsframe.server._http.names import InTable
from nsframe.server._http.validation import Envelope


class MergeInsertRequest(Envelope, kw_only=True):
    # The key column(s): repeated parameters or one comma-separated list.
    on: str | None = None
    when_matched_update_all: bool = False
    when_matched_update_all_filt: Sql | None = None
    when_not_matched_insert_all: bool = False
    when_not_matched_by_source_delete: bool = False
    when_not_matched_by_source_delete_filt: Sql | None = None
    # Accepted and ignored: Lance picks its join itself, and requests have no deadline.
    timeout: str | None = None
    use_index: bool | None = None
    branch: str | None = None

    QUERY = ("on", "when_matched_update_all", "when_matched_update_all_filt",
             "when_not_matched_insert_all", "when_not_matched_by_source_delete",
             "when_not_matched_by_source_delete_filt", "timeout", "use_index", "branch")

    def __post_init__(self) -> None:
        if not (self.on or "").strip():
            raise InvalidInputError(
                "The query parameter 'on' is required: name the key column(s) that match "
                "new rows to existing ones, e.g. ?on=id."
            )
        if not (self.when_matched_update_all or self.when_matched_update_all_filt
                or self.when_not_matched_insert_all or self.when_not_matched_by_source_delete
                or self.when_not_matched_by_source_delete_filt):
            raise InvalidInputError(
                "The merge does nothing: set when_matched_update_all, "
                "when_not_matched_insert_all or when_not_matched_by_source_delete."
            )


class UpdateRequest(Envelope, kw_only=True):
    # [[column, SQL expression], ...]: the new value of each column, from the old row.
    # (The column's name is measured as SQL too: a name is one term.)
    updates: list[list[Sql]] | None = None
    # LanceDB's client sends null for "every row".
    predicate: Sql | None = None
    branch: str | None = None
    properties: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not self.updates:
            raise InvalidInputError(
                "The member 'updates' is required: give [[column, SQL expression], ...], "
                'e.g. [["price", "price * 1.1"]].'
            )
        for i, pair in enumerate(self.updates):
            if len(pair) != 2 or not pair[0] or not pair[1].strip():
                raise InvalidInputError(
                    f"updates[{i}] must be a [column, SQL expression] pair of non-empty "
                    f"strings, got {pair!r}."
                )


class AddColumnsEntry(msgspec.Struct, kw_only=True):
    name: str
    # SQL over the existing columns; or `data_type` (nsframe's) for a column of nulls.
    expression: Sql | None = None
    data_type: dict[str, Any] | None = None
    virtual_column: dict[str, Any] | None = None


class AddColumnsRequest(Envelope, kw_only=True):
    new_columns: list[AddColumnsEntry] | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        if not self.new_columns:
            raise InvalidInputError(
                'The member \'new_columns\' is required: give [{"name": ..., "expression": '
                '"SQL"}, ...].'
            )
        for i, entry in enumerate(self.new_columns):
            if not entry.name:
                raise InvalidInputError(f"new_columns[{i}].name is empty: name the column.")
            if entry.virtual_column is not None:
                raise InvalidInputError(
                    f"new_columns[{i}] is a virtual column, which this server does not "
                    "store: give an SQL 'expression' instead."
                )
            if (entry.expression is None) == (entry.data_type is None):
                raise InvalidInputError(
                    f"new_columns[{i}] needs exactly one of 'expression' (SQL computing the "
                    "values) or 'data_type' (a column of nulls of that type)."
                )


class AlterColumnsEntry(msgspec.Struct, kw_only=True):
    path: InTable
    rename: InTable | None = None
    nullable: bool | None = None
    # A JsonArrowDataType, in either spelling (`schema_json.type_from_json`).
    data_type: dict[str, Any] | None = None
    virtual_column: dict[str, Any] | None = None


class AlterColumnsRequest(Envelope, kw_only=True):
    alterations: list[AlterColumnsEntry] | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        if not self.alterations:
            raise InvalidInputError(
                'The member \'alterations\' is required: give [{"path": ..., "rename": ..., '
                '"nullable": ..., "data_type": ...}, ...].'
            )
        for i, entry in enumerate(self.alterations):
            if entry.virtual_column is not None:
                raise InvalidInputError(
                    f"alterations[{i}] alters a virtual column; this server stores none."
                )
            if entry.rename is None and entry.nullable is None and entry.data_type is None:
                raise InvalidInputError(
                    f"alterations[{i}] changes nothing: give rename, nullable or data_type."
                )


class DropColumnsRequest(Envelope, kw_only=True):
    columns: list[str] | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        if not self.columns or not all(self.columns):
            raise InvalidInputError(
                "The member 'columns' is required: give the non-empty names of the columns "
                "to drop."
            )


class SchemaMetadataRequest(Envelope, kw_only=True):
    """The body is the bare map of keys to new values; only ``branch`` is a parameter."""

    branch: str | None = None

    QUERY = ("branch",)
