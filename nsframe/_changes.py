"""Changing a table in place: merge insert (upsert), update, add/alter/drop columns.

What a pandas workflow does after its first insert. `TableChanges` holds the methods
`Table` gets from it; `MergeInsert` is the builder ``tbl.merge_insert(on=...)`` returns.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from nsframe import _frames, _sql
from nsframe._models import Ref, WriteResult
from nsframe._protocol.schema_json import (
    schema_to_json,
    schema_to_lance_json,
    type_from_json,
)

if TYPE_CHECKING:
    from nsframe._client import Client


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class MergeResult:
    """What a merge insert did: the version it committed and the rows of each kind."""

    version: int | None
    num_inserted_rows: int
    num_updated_rows: int
    num_deleted_rows: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MergeResult:
        return cls(version=_int(data.get("version")),
                   num_inserted_rows=_int(data.get("num_inserted_rows")) or 0,
                   num_updated_rows=_int(data.get("num_updated_rows")) or 0,
                   num_deleted_rows=_int(data.get("num_deleted_rows")) or 0, raw=data)


@dataclass(frozen=True)
class MergeInsert:
    """A merge insert, built step by step and sent by `execute` (as LanceDB's builder).

    Rows of the new data are matched to the table's rows by the ``on`` columns; each
    ``when_*`` step says what happens to one kind of row. Every step returns a new
    builder.

    Example:
        >>> new = pd.DataFrame({"id": [3, 4], "name": ["hot cocoa", "mate"],
        ...                     "vector": [[0.5, 0.5], [0.3, 0.7]]})
        >>> (tbl.merge_insert(on="id").when_matched_update_all()
        ...     .when_not_matched_insert_all().execute(new))
        MergeResult(version=2, num_inserted_rows=1, num_updated_rows=1, num_deleted_rows=0)
    """

    table: TableChanges
    on: tuple[str, ...]
    update_matched: bool = False
    update_matched_if: str | None = None
    insert_unmatched: bool = False
    delete_unmatched: bool = False
    delete_unmatched_if: str | None = None

    def when_matched_update_all(self, where: str | None = None) -> MergeInsert:
        """Replace matched rows with the new data (only where the SQL ``where`` holds;
        it may use ``target.col`` and ``source.col``).

        Example:
            >>> new = pd.DataFrame({"id": [1, 2], "name": ["green tea", "decaf"],
            ...                     "vector": [[0.1, 0.9], [0.8, 0.2]]})
            >>> tbl.merge_insert("id").when_matched_update_all(where="target.id = 2").execute(new)
            MergeResult(version=2, num_inserted_rows=0, num_updated_rows=1, num_deleted_rows=0)
            >>> tbl.search().where("id = 2").select(["name"]).to_list()
            [{'name': 'decaf'}]
        """
        return replace(self, update_matched=True, update_matched_if=where)

    def when_not_matched_insert_all(self) -> MergeInsert:
        """Insert the new rows that match no row of the table.

        Example:
            >>> new = pd.DataFrame({"id": [3, 4], "name": ["cocoa", "mate"],
            ...                     "vector": [[0.5, 0.5], [0.3, 0.7]]})
            >>> tbl.merge_insert("id").when_not_matched_insert_all().execute(new)   # id 4 is new
            MergeResult(version=2, num_inserted_rows=1, num_updated_rows=0, num_deleted_rows=0)
        """
        return replace(self, insert_unmatched=True)

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeInsert:
        """Delete the table's rows that match no new row (only where ``condition``
        holds): with the two steps above, the table becomes the new data.

        Example:
            >>> keep = pd.DataFrame({"id": [1], "name": ["tea"], "vector": [[0.1, 0.9]]})
            >>> tbl.merge_insert("id").when_not_matched_by_source_delete().execute(keep)
            MergeResult(version=2, num_inserted_rows=0, num_updated_rows=0, num_deleted_rows=2)
            >>> tbl.count_rows()
            1
        """
        return replace(self, delete_unmatched=True, delete_unmatched_if=condition)

    def execute(self, data: Any, *,
                vector_columns: Mapping[str, int] | None = None,
                embed_batch_size: int | None = None) -> MergeResult:
        """Send the merge with ``data`` (anything `Table.insert` takes), as one request
        and one version: a merge cannot be split without changing its meaning. Vectors
        the table's embedding function fills are computed first (``embed_batch_size``
        texts per call).

        Example:
            >>> merge = tbl.merge_insert("id").when_matched_update_all()
            >>> merge = merge.when_not_matched_insert_all()
            >>> merge.execute([{"id": 3, "name": "hot cocoa", "vector": [0.5, 0.5]}])
            MergeResult(version=2, num_inserted_rows=0, num_updated_rows=1, num_deleted_rows=0)
        """
        if not (self.update_matched or self.insert_unmatched or self.delete_unmatched):
            raise ValueError("The merge does nothing: call when_matched_update_all(), "
                             "when_not_matched_insert_all() or "
                             "when_not_matched_by_source_delete() first.")
        return self.table._merge(self, data, vector_columns, embed_batch_size)


class TableChanges:
    """The in-place changes of `Table`: merge_insert, update, add/alter/drop columns."""

    if TYPE_CHECKING:
        _client: Client
        _ref: Ref

        @property
        def id(self) -> str: ...

        def _writable(self, action: str) -> None: ...

        def _conform(self, source: _frames.Source, *,
                     target: pa.Schema | bool | None = True) -> _frames.Source: ...

        def _embedded(self, source: _frames.Source, batch_size: int | None,
                      progress: Any, embedding: Any = None, *,
                      target: pa.Schema | bool | None = True,
                      overwrite: bool = False) -> _frames.Source: ...

        def _schema_or_none(self) -> pa.Schema | None: ...

    def merge_insert(self, on: str | Sequence[str]) -> MergeInsert:
        """Start a merge insert (an upsert, or a sync) keyed by the ``on`` column(s).

        Example:
            >>> new = pd.DataFrame({"id": [3, 4], "name": ["hot cocoa", "mate"],
            ...                     "vector": [[0.5, 0.5], [0.3, 0.7]]})
            >>> (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            ...     .execute(new))
            MergeResult(version=2, num_inserted_rows=1, num_updated_rows=1, num_deleted_rows=0)
        """
        keys = (on,) if isinstance(on, str) else tuple(on)
        if not keys or not all(isinstance(k, str) and k for k in keys):
            raise ValueError(f"merge_insert() needs the key column name(s), got {on!r}.")
        return MergeInsert(self, keys)

    def _merge(self, merge: MergeInsert, data: Any,
               vector_columns: Mapping[str, int] | None,
               embed_batch_size: int | None = None) -> MergeResult:
        self._writable("merge into")
        source = _frames.to_source(data, vector_columns=vector_columns)
        target = self._schema_or_none()  # one describe for both steps
        source = self._embedded(source, embed_batch_size, None, target=target)
        if not isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
            source = self._conform(source, target=target)
        stream = _frames.ipc_stream_chunks(source.batches, source.schema)
        answer = self._client.merge_insert(
            self.id, stream, on=merge.on,
            when_matched_update_all=merge.update_matched,
            when_matched_update_all_filt=merge.update_matched_if,
            when_not_matched_insert_all=merge.insert_unmatched,
            when_not_matched_by_source_delete=merge.delete_unmatched
            and merge.delete_unmatched_if is None,
            when_not_matched_by_source_delete_filt=merge.delete_unmatched_if,
            branch=self._ref.branch)
        return MergeResult.from_json(answer)

    def update(self, where: str | None = None, values: Mapping[str, Any] | None = None, *,
               values_sql: Mapping[str, str] | None = None) -> WriteResult:
        """Set columns on the rows matching the SQL ``where`` (every row without it).

        ``values`` holds Python values (quoted safely as SQL literals); ``values_sql``
        holds SQL expressions over the row (``{"price": "price * 1.1"}``). Give one.

        Returns:
            The version written; ``num_rows`` is the number of rows updated.

        Example:
            >>> tbl.update("id = 2", {"name": "espresso"})
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> tbl.update(values_sql={"id": "id + 10"}).num_rows
            3
            >>> tbl.search().where("name = 'espresso'").select(["id"]).to_list()
            [{'id': 12}]
        """
        self._writable("update")
        if (values is None) == (values_sql is None):
            raise ValueError("update() takes exactly one of values= or values_sql=.")
        updates = ({str(c): _sql.literal(v) for c, v in values.items()} if values is not None
                   else {str(c): str(e) for c, e in (values_sql or {}).items()})
        if not updates:
            raise ValueError("update() needs at least one column to set.")
        if where is not None and (not isinstance(where, str) or not where.strip()):
            raise ValueError("where must be a SQL condition, or None for every row.")
        answer = self._client.update(self.id, updates, predicate=where,
                                     branch=self._ref.branch)
        rows_key = "updated_rows" if "updated_rows" in answer else "rows_updated"
        return WriteResult.from_json(answer, rows_key)

    def add_columns(self, transforms: Mapping[str, str] | pa.Field | Sequence[pa.Field]
                    | pa.Schema) -> WriteResult:
        """Add columns: ``{name: SQL expression}`` computed from each row, or Arrow
        fields (a field, a list of them, a schema) as columns of nulls.

        Example:
            >>> tbl.add_columns({"id2": "id * 2"})
            WriteResult(version=2, num_rows=None, transaction_id=None)
            >>> tbl.to_arrow(columns=["id", "id2"]).to_pydict()
            {'id': [1, 2, 3], 'id2': [2, 4, 6]}
        """
        self._writable("add columns to")
        if isinstance(transforms, pa.Field):
            transforms = [transforms]
        entries: list[dict[str, Any]]
        if isinstance(transforms, Mapping):
            entries = [{"name": str(n), "expression": str(e)} for n, e in transforms.items()]
        else:
            fields = list(transforms)
            if not all(isinstance(f, pa.Field) for f in fields):
                raise TypeError("add_columns() takes {name: SQL expression}, or Arrow fields.")
            entries = [{"name": f.name, "data_type": _type_json(f.type)} for f in fields]
        if not entries:
            raise ValueError("add_columns() needs at least one column.")
        answer = self._client.add_columns(self.id, entries, branch=self._ref.branch)
        return WriteResult.from_json(answer, "num_rows")

    def alter_columns(self, *alterations: Mapping[str, Any]) -> WriteResult:
        """Rename, retype or change the nullability of columns: each alteration is
        ``{"path": column, "rename"?: new name, "nullable"?: bool, "data_type"?: Arrow
        type}`` (LanceDB's shape).

        Example:
            >>> tbl.alter_columns({"path": "name", "rename": "drink"})
            WriteResult(version=2, num_rows=None, transaction_id=None)
            >>> tbl.schema.names
            ['id', 'drink', 'vector']
        """
        self._writable("alter columns of")
        if not alterations:
            raise ValueError("alter_columns() needs at least one alteration.")
        wire: list[dict[str, Any]] = []
        for alteration in alterations:
            entry = {k: v for k, v in alteration.items() if v is not None}
            if "name" in entry and "rename" not in entry:
                entry["rename"] = entry.pop("name")  # pylance's spelling of it
            if isinstance(entry.get("data_type"), pa.DataType):
                entry["data_type"] = _type_json(entry["data_type"])
            if "path" not in entry:
                raise ValueError(f"An alteration needs the column's 'path': {alteration!r}.")
            wire.append(entry)
        answer = self._client.alter_columns(self.id, wire, branch=self._ref.branch)
        return WriteResult.from_json(answer, "num_rows")

    def drop_columns(self, columns: str | Sequence[str]) -> WriteResult:
        """Remove columns (their data stays readable at older versions).

        Example:
            >>> tbl.drop_columns("name")
            WriteResult(version=2, num_rows=None, transaction_id=None)
            >>> tbl.schema.names
            ['id', 'vector']
        """
        self._writable("drop columns of")
        names = [columns] if isinstance(columns, str) else list(columns)
        if not names:
            raise ValueError("drop_columns() needs at least one column name.")
        answer = self._client.drop_columns(self.id, names, branch=self._ref.branch)
        return WriteResult.from_json(answer, "num_rows")


def _type_json(t: pa.DataType) -> dict[str, Any]:
    """A type as JSON: the namespace spelling where it is exact (every server reads it),
    else Lance's, which keeps units and time zones (nsframe's server reads both)."""
    schema = pa.schema([pa.field("c", t)])
    spelled: dict[str, Any] = schema_to_json(schema)["fields"][0]["type"]
    try:
        if type_from_json(spelled) == t:
            return spelled
    except ValueError:
        pass  # a type the namespace spelling cannot name
    lance: dict[str, Any] = schema_to_lance_json(schema)["fields"][0]["type"]
    return lance
