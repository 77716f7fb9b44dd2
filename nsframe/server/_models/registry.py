"""Catalog operations on a table's name: rename, register, deregister; and the table
version records this server does not offer."""

from __future__ import annotations

from typing import Any

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import Choice
from nsframe.server._http.names import Location, NamespaceId, TableName
from nsframe.server._http.validation import Envelope


class RenameTableRequest(Envelope, kw_only=True):
    new_table_name: TableName | None = None
    # Upstream's name; `new_namespace` is LanceDB's. Missing: the same namespace.
    new_namespace_id: NamespaceId | None = None
    new_namespace: NamespaceId | None = None

    def __post_init__(self) -> None:
        if not self.new_table_name:
            raise InvalidInputError(
                "The member 'new_table_name' is required: give the table's new name."
            )
        if self.new_namespace_id is not None and self.new_namespace is not None \
                and self.new_namespace_id != self.new_namespace:
            raise InvalidInputError(
                "new_namespace_id and new_namespace name different namespaces: send one."
            )

    @property
    def namespace(self) -> list[str] | None:
        return self.new_namespace_id if self.new_namespace_id is not None \
            else self.new_namespace


class RegisterMode(Choice):
    CHOICES = ("Create", "Overwrite")
    DEFAULT = "Create"


class RegisterTableRequest(Envelope, kw_only=True):
    location: Location | None = None
    mode: RegisterMode = RegisterMode.default()
    properties: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not self.location:
            raise InvalidInputError(
                "The member 'location' is required: give the path of a Lance dataset inside "
                "the server's storage root (relative to the root, or absolute)."
            )


class TableVersionRecordRequest(Envelope, kw_only=True):
    """CreateTableVersion and BatchDeleteTableVersions: refused whatever they hold."""

    version: Any = None
    ranges: Any = None
