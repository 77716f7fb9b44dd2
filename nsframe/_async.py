"""`connect_async()`: the same API, awaited, for Jupyter's top-level ``await`` and asyncio
web apps.

Not a second client: each async object wraps its sync one (`Connection`, `Namespace`,
`Table`, `Query`, tags and branches) and runs every call that talks to the server in a
worker thread (``asyncio.to_thread``), through the same transport, retries and error
mapping. Calls that send nothing (``tbl.search(v).where(...).limit(10)``, ``tbl.name``)
run at once; the rest are awaited: ``await tbl.count_rows()``, ``await q.to_pandas()``.
Properties that ask the server (``tbl.version``, ``tbl.schema``) become methods:
``await tbl.version()``. Many calls may be awaited together (``asyncio.gather``): the
client is thread-safe and its pool keeps a connection per concurrent call.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from nsframe._connection import Connection, connect
from nsframe._namespace import Namespace
from nsframe._query import Query
from nsframe._refs import Branches, Tags
from nsframe._table import Table


class _Async:
    """Wraps a sync object: attributes in ``_local`` and calls in ``_builders`` run at
    once (they send nothing); any other method or property runs in a worker thread and
    is awaited."""

    _local: ClassVar[frozenset[str]] = frozenset()
    _builders: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, sync: Any) -> None:
        self._sync = sync

    @property
    def sync(self) -> Any:
        """The sync object this one wraps."""
        return self._sync

    def __repr__(self) -> str:
        return f"Async{self._sync!r}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Async) and other._sync == self._sync

    def __hash__(self) -> int:
        return hash(self._sync)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._local:
            return _wrap(getattr(self._sync, name))
        found = inspect.getattr_static(type(self._sync), name)  # AttributeError if none
        sync = self._sync
        if isinstance(found, property):
            async def read() -> Any:
                return _wrap(await asyncio.to_thread(getattr, sync, name))
            read.__doc__ = found.__doc__
            return read
        method: Callable[..., Any] = getattr(sync, name)
        if name in self._builders:
            @functools.wraps(method)
            def build(*args: Any, **kwargs: Any) -> Any:
                return _wrap(method(*args, **kwargs))
            return build

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return _wrap(await asyncio.to_thread(method, *args, **kwargs))
        return call


class AsyncConnection(_Async):
    """`Connection`, awaited; from `nsframe.connect_async`. Also an async context
    manager (``async with``), which closes it."""

    _local = frozenset({"client", "url", "delimiter", "closed", "local_root"})
    _builders = frozenset({"namespace", "table"})

    async def __aenter__(self) -> AsyncConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self._sync.close)


class AsyncNamespace(_Async):
    """`Namespace`, awaited."""

    _local = frozenset({"id", "name", "parts"})
    _builders = frozenset({"table"})


class AsyncTable(_Async):
    """`Table`, awaited: ``await tbl.count_rows()``, ``await tbl.insert(df)``,
    ``await tbl.search(v).limit(10).to_pandas()``; ``await tbl.version()``."""

    _local = frozenset({"id", "name", "namespace", "ref", "branch_name", "tags", "branches"})
    _builders = frozenset({"search", "query", "branch", "latest"})


class AsyncQuery(_Async):
    """`Query`, awaited at its end: builders run at once, ``await q.to_pandas()``."""

    _builders = frozenset(
        name for name, member in vars(Query).items()
        if callable(member) and not name.startswith("_")
        and name not in {"to_arrow", "to_arrow_with_version", "to_pandas", "to_polars",
                         "to_list", "explain_plan", "analyze_plan"})
    _local = frozenset({"is_search"})


_WRAPPERS: dict[type, type[_Async]] = {
    Connection: AsyncConnection, Namespace: AsyncNamespace, Table: AsyncTable,
    Query: AsyncQuery, Tags: _Async, Branches: _Async,
}


def _wrap(value: Any) -> Any:
    """``value`` with its nsframe objects as their async counterparts."""
    for cls, wrapper in _WRAPPERS.items():
        if isinstance(value, cls):
            return wrapper(value)
    if isinstance(value, list) and value and isinstance(value[0], (Table, Namespace)):
        return [_wrap(item) for item in value]
    return value


async def connect_async(url: Any = None, **options: Any) -> AsyncConnection:
    """`nsframe.connect`, awaited: the same arguments (``transport=``, ``retry_config=``
    ...); the connection's calls are awaited. A local folder starts the embedded server
    in a worker thread, so the event loop never waits for it.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     async with await nsframe.connect_async("./async-data") as conn:
        ...         tbl = await conn.create_table("items", {"id": [1, 2, 3]})
        ...         counts = await asyncio.gather(tbl.count_rows(), tbl.count_rows("id > 1"))
        ...         first = await tbl.search().where("id = 1").to_list()
        ...         return counts, first
        >>> asyncio.run(main())
        ([3, 2], [{'id': 1}])
    """
    return AsyncConnection(await asyncio.to_thread(connect, url, **options))
