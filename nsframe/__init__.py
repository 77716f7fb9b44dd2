"""nsframe: versioned vector tables for people who work in pandas and polars.

Example:
    >>> import nsframe
    >>> conn = nsframe.connect("./nsframe-data")      # serves the folder locally
    >>> tbl = conn.create_table("points", {"id": [1, 2], "vector": [[0.1, 0.2], [0.3, 0.4]]})
    >>> tbl.search([0.1, 0.2]).limit(1).to_pandas()
       id      vector  _distance
    0   1  [0.1, 0.2]        0.0
    >>> conn.close()
"""

from __future__ import annotations

import typing as _typing

from nsframe import exceptions, transport
from nsframe._async import (
    AsyncConnection,
    AsyncNamespace,
    AsyncQuery,
    AsyncTable,
    connect_async,
)
from nsframe._changes import MergeInsert, MergeResult
from nsframe._client import Client
from nsframe._client.config import RetryConfig, TimeoutConfig
from nsframe._connection import Connection, connect, get_default, set_default
from nsframe._history import History
from nsframe._models import (
    Branch,
    FragmentStatistics,
    IndexInfo,
    Ref,
    TableInfo,
    TableStatistics,
    Tag,
    Transaction,
    Version,
    WriteResult,
)
from nsframe._namespace import Namespace
from nsframe._public import show_public as _show_public
from nsframe._query import Query
from nsframe._refs import Branches, Tags
from nsframe._table import Table
from nsframe._version import __version__
from nsframe.exceptions import (
    APIError,
    NotFoundError,
    NsframeError,
    PartialWriteError,
    ReadOnlyTableError,
    RequestTimeoutError,
    TableNotFoundError,
    TransportError,
)

if _typing.TYPE_CHECKING:
    from nsframe.widgets import Browser



def browse(source: Connection | Table, *, connection: Connection | None = None) -> Browser:
    """An ipywidgets browser of a connection's namespaces and tables, or of one table.

    ``nsframe.widgets`` (and ipywidgets) are imported only when this is called; see
    `nsframe.widgets.browse`.
    """
    from nsframe.widgets import browse as _browse

    return _browse(source, connection=connection)


__all__ = [
    "APIError",
    "AsyncConnection",
    "AsyncNamespace",
    "AsyncQuery",
    "AsyncTable",
    "Branch",
    "Branches",
    "Client",
    "Connection",
    "FragmentStatistics",
    "History",
    "IndexInfo",
    "MergeInsert",
    "MergeResult",
    "Namespace",
    "NotFoundError",
    "NsframeError",
    "PartialWriteError",
    "Query",
    "ReadOnlyTableError",
    "Ref",
    "RequestTimeoutError",
    "RetryConfig",
    "Table",
    "TableInfo",
    "TableNotFoundError",
    "TableStatistics",
    "Tag",
    "Tags",
    "TimeoutConfig",
    "Transaction",
    "TransportError",
    "Version",
    "WriteResult",
    "__version__",
    "browse",
    "connect",
    "connect_async",
    "exceptions",
    "get_default",
    "set_default",
    "transport",
]

# Tracebacks and reprs show the public path, as httpx does.
_show_public(globals(), "nsframe")

# df.ns on pandas and polars frames: now for a library already imported, else on import.
from nsframe.accessors import register as _register_accessors  # noqa: E402

_register_accessors()
