"""Notebook widgets (``pip install 'nsframe[widgets]'``): `browse` a connection or a table.

Importing this module is cheap: ipywidgets loads only when a `Browser` is made, so
``nsframe`` can re-export `browse` without importing ipywidgets.

Example:
    >>> from nsframe.widgets import browse
    >>> w = browse(conn)          # display it, pick a table, a branch, a version...
    >>> w.table_picker.value = "items"        # (what a click on a table does)
    >>> w.selected.to_pandas()    # ...and read the selection in the next cell
       id    name      vector
    0   1     tea  [0.1, 0.9]
    1   2  coffee  [0.8, 0.2]
    2   3   cocoa  [0.5, 0.5]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsframe._connection import Connection
    from nsframe._table import Table
    from nsframe.widgets._browser import Browser

__all__ = ["Browser", "browse"]


def _browser_class() -> type[Browser]:
    try:
        from nsframe.widgets._browser import Browser
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("ipywidgets", "traitlets"):
            raise ImportError("nsframe's widgets need ipywidgets: "
                              "pip install 'nsframe[widgets]'") from exc
        raise
    return Browser


def browse(source: Connection | Table, *, connection: Connection | None = None) -> Browser:
    """A `Browser` of a connection's namespaces and tables, or of one table.

    Args:
        source: a `Connection` (start at its namespaces) or a `Table` (start at it, at
            its branch and version).
        connection: with a table, also browse the namespaces and tables beside it.

    Returns:
        The widget; display it, then read ``w.selected`` & co. in the next cell.

    Raises:
        TypeError: if ``source`` is neither a Connection nor a Table.
        ImportError: if ipywidgets is not installed.
    """
    return _browser_class()(source, connection=connection)


def __getattr__(name: str) -> Any:
    # `Browser` is imported on first access, with ipywidgets.
    if name == "Browser":
        return _browser_class()
    raise AttributeError(f"module 'nsframe.widgets' has no attribute {name!r}")
