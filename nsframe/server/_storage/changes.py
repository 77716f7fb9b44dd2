"""Writes that change a table in place: merge insert (upsert), update, add, alter and drop
columns, schema metadata.

Each runs on a dataset object of the request's own (`Catalog.dataset`) at the latest
version of its branch, and commits one new version of that branch through Lance's
conditional commit, so concurrent writers never lose each other's work. Every one runs
inside `leases.writing`, as writes that add data files must (merge, update, computed
columns and casts do), so that a crash's leftovers can be told from a write in progress
(docs/storage.md).

A merge insert never leaves two rows of one key, however many servers merge at once
(docs/server.md, "Primary keys"): on a table that declares its primary key, a merge on
that key is checked by Lance's commit, and a merge on other columns is refused; on a
table without one, merges that insert take turns (`merge_turns.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TypeVar
from urllib.parse import quote

import pyarrow as pa
from lance.dataset import LanceDataset

from nsframe._protocol.defaults import normalize_branch
from nsframe.exceptions import (
    ConcurrentModificationError,
    InvalidInputError,
    SchemaMismatchError,
    ServiceUnavailableError,
)
from nsframe.server._storage import merge_turns, turns
from nsframe.server._storage.catalog import Catalog, TableRef
from nsframe.server._storage.errors import lance_errors
from nsframe.server._storage.keys import declared_key
from nsframe.server._storage.metrics import CHANGE_SCHEMA_RETRY
from nsframe.server._storage.writes import IncomingBatches, _dropped_meanwhile

T = TypeVar("T")


@contextmanager
def changing(catalog: Catalog, ref: TableRef, branch: str | None,
             context: str) -> Iterator[LanceDataset]:
    """The latest version of ``branch`` of ``ref``, to change in the block; kept as the
    newest known state once the block has committed. Lance's errors inside become the
    contract's, ``context`` prefixing an input error's detail."""
    with catalog.leases.writing(ref.key), _dropped_meanwhile(catalog, ref), \
            lance_errors(context):
        ds = catalog.dataset(ref, branch=branch)
        yield ds
    catalog.remember(ref, branch, ds)


def change_schema(catalog: Catalog, ref: TableRef, branch: str | None, context: str,
                  change: Callable[[LanceDataset], None]) -> LanceDataset:
    """Apply ``change`` (add, alter or drop columns) to the latest version of ``branch``
    and commit it, taking its turn against concurrent inserts (`in_turn`)."""
    return in_turn(catalog, ref, branch, context, change)[0]


def rewrite_rows(catalog: Catalog, ref: TableRef, branch: str | None, context: str,
                 rewrite: Callable[[LanceDataset], T]) -> tuple[LanceDataset, T]:
    """Apply ``rewrite`` (an update or a delete) to the latest version of ``branch`` and
    commit it: alone first, as it rarely conflicts with an append; but Lance retries its
    commit only so often, and a steady stream of appends (most of all on object storage,
    where a commit takes longest) can win every race, so one that lost takes its turn."""
    try:
        with changing(catalog, ref, branch, context) as ds:
            result = rewrite(ds)
        return ds, result
    except (ConcurrentModificationError, ServiceUnavailableError):
        return in_turn(catalog, ref, branch, context, rewrite)


def in_turn(catalog: Catalog, ref: TableRef, branch: str | None, context: str,
            change: Callable[[LanceDataset], T]) -> tuple[LanceDataset, T]:
    """Apply ``change`` to the latest version of ``branch`` and commit it, taking its turn
    against concurrent inserts (`turns`): inserts are held back meanwhile, and an attempt
    that lost to a write committed first is tried again on the newer version, for at most
    `turns.CHANGE_SECONDS`. Also the result of ``change``."""
    deadline = time.monotonic() + turns.CHANGE_SECONDS
    pause = 0.02
    with catalog.turns.schema_change(ref.key):
        while True:
            try:
                with changing(catalog, ref, branch, context) as ds:
                    result = change(ds)
                return ds, result
            except (ConcurrentModificationError, ServiceUnavailableError):
                # Lost the commit race to a write already under way, or Lance gave up
                # retrying ("too many concurrent writers"): the newer version, again.
                if time.monotonic() + pause >= deadline:
                    raise
            CHANGE_SCHEMA_RETRY.inc()
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


@dataclass(frozen=True)
class Merge:
    """What a merge insert does with each kind of row (upstream's MergeInsertIntoTable)."""

    on: list[str]
    update_matched: bool = False
    update_matched_if: str | None = None
    insert_unmatched: bool = False
    delete_unmatched_target: bool = False
    delete_unmatched_target_if: str | None = None


def merge_insert(catalog: Catalog, ref: TableRef, branch: str | None, ds: LanceDataset,
                 merge: Merge, stream: IncomingBatches, label: str) -> dict[str, int]:
    """Merge ``stream`` into ``ds`` (the latest known version of ``branch`` of ``ref``,
    from `changing`) by the ``on`` columns; the rows inserted, updated and deleted.
    Source columns must be table columns of the same type; a source may leave out
    columns (matched rows keep their values there, inserted rows get nulls)."""
    _check_source(stream.schema, ds.schema, merge.on, label)
    key = declared_key(ds)
    if key:
        return _merge(ds, replace(merge, on=_on_key(merge.on, key, label)), stream)
    if not merge.insert_unmatched:
        # Inserts are what snapshot isolation lets repeat; concurrent updates and deletes
        # of one row conflict in Lance's commit, and the merge retries.
        return _merge(ds, merge, stream)
    # One queue per data folder and branch (a renamed table keeps its folder).
    name = quote(f"{ref.key}@{normalize_branch(branch) or ''}", safe="")
    with merge_turns.one_at_a_time(catalog.objects, catalog.leases, name, label):
        # In place: the caller answers ds.version. (pylance leaves it untyped.)
        ds.checkout_latest()  # type: ignore[no-untyped-call]
        return _merge(ds, merge, stream)


def _on_key(on: list[str], key: list[str], label: str) -> list[str]:
    """``on`` in the key's order; a merge on other columns is refused, as it could insert
    a second row of a key (and Lance checks concurrent merges only on the key)."""
    if sorted(on) == sorted(key):
        return key
    named = ", ".join(map(repr, key))
    raise InvalidInputError(
        f"Table {label!r} has the primary key {named}: merge on it (on={','.join(key)}). A "
        f"merge on {', '.join(map(repr, on))} could insert a second row of a key."
    )


def _merge(ds: LanceDataset, merge: Merge, stream: IncomingBatches) -> dict[str, int]:
    builder = ds.merge_insert(merge.on)
    if merge.update_matched or merge.update_matched_if:
        builder = builder.when_matched_update_all(merge.update_matched_if)
    if merge.insert_unmatched:
        builder = builder.when_not_matched_insert_all()
    if merge.delete_unmatched_target or merge.delete_unmatched_target_if:
        builder = builder.when_not_matched_by_source_delete(merge.delete_unmatched_target_if)
    try:
        stats = builder.execute(stream.reader())
    except Exception:
        if stream.error is not None:
            raise stream.error from None
        raise
    return {k: int(stats.get(k) or 0)
            for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}


def _check_source(source: pa.Schema, table: pa.Schema, on: list[str], label: str) -> None:
    problems = [f"the key column {key!r} is not in the data" for key in on
                if key not in source.names]
    for field in source:
        if field.name not in table.names:
            problems.append(f"column {field.name!r} is not in the table")
        elif not field.type.equals(table.field(field.name).type):
            problems.append(f"column {field.name!r} is {field.type}, the table has "
                            f"{table.field(field.name).type}")
    if problems:
        raise SchemaMismatchError(
            f"The data does not fit a merge into table {label!r}: " + "; ".join(problems)
            + ". Cast the columns to the table's types."
        )


def _check_name(name: str, member: str) -> None:
    if not name:
        raise InvalidInputError(f"{member} is empty: name the column.")
    if "." in name:
        raise InvalidInputError(
            f"{member} {name!r} holds '.', which separates the fields of a path: choose a "
            "name without it."
        )


def check_renames(schema: pa.Schema, renames: list[tuple[list[str], str]]) -> None:
    """Refuse renames to an empty or dotted name, or to a name a sibling keeps: Lance
    would fail on the first two and, inside a struct, commit two fields of one name.
    ``renames`` holds each field's path segments and its new name."""
    siblings: dict[tuple[str, ...], dict[str, str]] = {}  # parent -> old name -> new name
    for segments, name in renames:
        _check_name(name, f"The new name of {'.'.join(segments)!r}")
        parent = tuple(segments[:-1])
        if parent not in siblings:
            fields: pa.Schema | pa.DataType = schema
            for segment in parent:
                fields = fields.field(segment).type if isinstance(
                    fields, (pa.Schema, pa.StructType)) else fields
            if not isinstance(fields, (pa.Schema, pa.StructType)):
                continue  # inside a list: Lance judges it
            siblings[parent] = {f.name: f.name for f in fields}
        siblings[parent][segments[-1]] = name
    for names in siblings.values():
        seen: dict[str, str] = {}
        for old, new in names.items():
            if new in seen:
                raise SchemaMismatchError(
                    f"Renaming would give two columns the name {new!r} ({seen[new]!r} and "
                    f"{old!r}): choose another name, or rename or drop the other column too."
                )
            seen[new] = old


def add_columns(ds: LanceDataset, computed: dict[str, str], nulls: list[pa.Field]) -> None:
    """Columns computed by SQL over each row, then columns of nulls (metadata only)."""
    for name in [*computed, *(f.name for f in nulls)]:
        _check_name(name, "The new column's name")
    taken = [name for name in [*computed, *(f.name for f in nulls)] if name in ds.schema.names]
    if taken:
        raise SchemaMismatchError(
            f"The table already has column(s) {', '.join(map(repr, taken))}: choose new "
            "names, or alter the existing columns."
        )
    if computed:
        with lance_errors("A new column's expression is not valid", ds.schema.names):
            ds.add_columns(computed)
    if nulls:
        ds.add_columns(pa.schema(nulls))
