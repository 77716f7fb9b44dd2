"""`Namespace`: a lazy handle on one namespace (a folder of tables and namespaces).

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nsframe._client import Client
from nsframe._client.wire import paged
from nsframe._protocol.ids import join_id, split_id
from nsframe.exceptions import NsframeError

if TYPE_CHECKING:
    from nsframe._table import Table


def list_all(fetch: Callable[[str | None], dict[str, Any]], key: str) -> list[str]:
    """Every item of a paged listing: follow ``page_token`` until it is empty."""
    return [str(x) for page in paged(fetch) for x in page.get(key) or []]


class Namespace:
    """A namespace of the service, addressed by its id parts (``()`` is the root)."""

    def __init__(self, client: Client, ident: Sequence[str] | str) -> None:
        if isinstance(ident, str):
            # "" is the root too, for callers that hold an id as a possibly empty string.
            ident = split_id(ident, client.delimiter) if ident else []
        self._client = client
        self._parts: tuple[str, ...] = tuple(ident)

    @property
    def id(self) -> str:
        """The id as a string; the delimiter alone is the root namespace.

        Example:
            >>> conn.namespace("lab$2024").id, conn.namespace().id
            ('lab$2024', '$')
        """
        return join_id(self._parts, self._client.delimiter)

    @property
    def name(self) -> str:
        """The last part of the id (``""`` for the root).

        Example:
            >>> conn.namespace("lab$2024").name
            '2024'
        """
        return self._parts[-1] if self._parts else ""

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts of the id, as a tuple (``()`` for the root).

        Example:
            >>> conn.namespace("lab$2024").parts
            ('lab', '2024')
        """
        return self._parts

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Namespace) and other._client is self._client
                and other._parts == self._parts)

    def __hash__(self) -> int:
        return hash(self._parts)

    def properties(self) -> dict[str, str] | None:
        """The namespace's properties (None when the server does not keep any).

        Example:
            >>> lab = conn.create_namespace("lab", properties={"owner": "ana"})
            >>> lab.properties()
            {'owner': 'ana'}
        """
        props = self._client.describe_namespace(self.id).get("properties")
        return {str(k): str(v) for k, v in props.items()} if isinstance(props, dict) else None

    def exists(self) -> bool:
        """Whether the namespace exists on the server.

        Example:
            >>> conn.namespace("lab").exists()
            False
            >>> conn.create_namespace("lab").exists()
            True
        """
        return self._client.namespace_exists(self.id)

    def namespaces(self) -> list[str]:
        """Full ids of the child namespaces, sorted.

        Example:
            >>> lab = conn.create_namespace("lab")
            >>> _ = lab.create_namespace("2024")
            >>> lab.namespaces()
            ['lab$2024']
        """
        names = list_all(lambda t: self._client.list_namespaces(self.id, page_token=t),
                         "namespaces")
        return sorted(join_id([*self._parts, n], self._client.delimiter) for n in names)

    def table_names(self) -> list[str]:
        """Names of the tables directly in this namespace, sorted.

        Example:
            >>> lab = conn.create_namespace("lab")
            >>> _ = conn.create_table("lab$runs", {"id": [1]})
            >>> lab.table_names()
            ['runs']
        """
        return sorted(list_all(lambda t: self._client.list_tables(self.id, page_token=t),
                               "tables"))

    def table(self, name: str) -> Table:
        """A lazy handle on table ``name`` of this namespace.

        Example:
            >>> lab = conn.create_namespace("lab")
            >>> lab.table("runs")            # or lab["runs"]; no request yet
            Table('lab$runs', main)
        """
        from nsframe._table import Table

        return Table(self._client, [*self._parts, name])

    def __getitem__(self, name: str) -> Table:
        return self.table(name)

    def create_namespace(self, name: str, *, mode: str = "create", exist_ok: bool = False,
                         properties: dict[str, str] | None = None) -> Namespace:
        """Create a child namespace and return a handle on it (``mode`` and ``exist_ok``
        as in `Connection.create_namespace`).

        Example:
            >>> lab = conn.create_namespace("lab")
            >>> lab.create_namespace("2024")
            Namespace('lab$2024')
            >>> lab.create_namespace("2024", exist_ok=True).id
            'lab$2024'
        """
        from nsframe._connection import wire_create_mode

        child = Namespace(self._client, [*self._parts, name])
        self._client.create_namespace(child.id, mode=wire_create_mode(mode, exist_ok),
                                      properties=properties)
        return child

    def drop(self, *, mode: str = "fail", behavior: str = "restrict") -> None:
        """Drop this namespace (``behavior="cascade"`` drops its content too).

        Example:
            >>> lab = conn.create_namespace("lab")
            >>> _ = conn.create_table("lab$runs", {"id": [1]})
            >>> lab.drop(behavior="cascade")        # its tables too
            >>> lab.exists()
            False
        """
        self._client.drop_namespace(self.id, mode=mode, behavior=behavior)

    def __repr__(self) -> str:
        # No request: a repr must answer at once, even with the server down (a
        # traceback or a debugger shows it). _repr_html_ asks the server.
        return f"Namespace({self.id!r})"

    def _repr_html_(self) -> str:
        try:
            tables = self.table_names()
        except NsframeError as exc:
            return f"<div><b>nsframe Namespace</b> <code>{html.escape(self.id)}</code>: " \
                   f"unavailable ({html.escape(type(exc).__name__)})</div>"
        items = "".join(f"<li><code>{html.escape(t)}</code></li>" for t in tables)
        return (f"<div><b>nsframe Namespace</b> <code>{html.escape(self.id)}</code>: "
                f"{len(tables)} tables<ul>{items}</ul></div>")
