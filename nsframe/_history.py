"""`History`: a table's versions, shown as a table rather than a wall of ``Version(...)``.

It is a list of `Version` (so code that iterates ``tbl.versions()`` keeps working) that
displays as rows with the columns of deltalake's ``history()``: version, timestamp,
operation, its details (the condition of a delete or update, the version a restore went
back to), rows and tags, and converts to a pandas, polars
or Arrow frame.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from nsframe import _frames
from nsframe._models import Version

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

COLUMNS = ("version", "timestamp", "operation", "details", "rows", "tags")
# Versions shown by the repr before it elides the middle, as pandas does for long frames.
SHOWN = 20


class History(list[Version]):
    """The versions of one branch of a table, oldest first (`Table.versions`)."""

    def __init__(self, versions: Iterable[Version] = ()) -> None:
        super().__init__(versions)

    def to_arrow(self) -> pa.Table:
        """One row per version: version, timestamp, operation, details, rows, tags.

        Example:
            >>> tbl.versions().to_arrow().column_names
            ['version', 'timestamp', 'operation', 'details', 'rows', 'tags']
        """
        return pa.table({
            "version": pa.array([v.version for v in self], pa.int64()),
            "timestamp": pa.array([v.timestamp for v in self], pa.timestamp("ms", tz="UTC")),
            "operation": pa.array([v.operation for v in self], pa.string()),
            "details": pa.array([details(v) for v in self], pa.string()),
            "rows": pa.array([v.num_rows for v in self], pa.int64()),
            "tags": pa.array([list(v.tags) for v in self], pa.list_(pa.string())),
        })

    def to_pandas(self) -> pd.DataFrame:
        """The history as a pandas DataFrame (one row per version, see `to_arrow`).

        Example:
            >>> tbl.versions().to_pandas()[["version", "operation", "rows"]]
               version  operation  rows
            0        1  Overwrite     3
        """
        return _frames.to_pandas(self.to_arrow())

    def to_polars(self) -> pl.DataFrame:
        """The history as a polars DataFrame (one row per version, see `to_arrow`).

        Example:
            >>> tbl.versions().to_polars().select("version", "operation").rows()
            [(1, 'Overwrite')]
        """
        return _frames.to_polars(self.to_arrow())

    def _cells(self) -> list[list[str]]:
        rows = []
        for v in self:
            when = v.timestamp.strftime("%Y-%m-%d %H:%M:%S") if v.timestamp else ""
            rows.append([str(v.version), when, v.operation, details(v),
                         "" if v.num_rows is None else str(v.num_rows), ", ".join(v.tags)])
        if len(rows) > SHOWN:
            rows = [*rows[:SHOWN // 2], ["…"] * len(COLUMNS), *rows[-SHOWN // 2:]]
        return rows

    def __repr__(self) -> str:
        cells = [list(COLUMNS), *self._cells()]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                 for row in cells]
        return "\n".join([*lines, f"[{len(self)} versions]"])

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                       for row in self._cells())
        return (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p>{len(self)} versions</p>")


def details(version: Version) -> str:
    """What a version's operation was given, on one line: ``where <condition>`` for a delete
    or an update, ``from version N`` for a restore, else empty (never a null)."""
    predicate = version.metadata.get("predicate")
    if predicate:
        return "where " + " ".join(predicate.split())
    restored = version.metadata.get("restored_version")
    if restored:
        return f"from version {restored}"
    return ""
