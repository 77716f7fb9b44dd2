"""`connect()` and `Connection`: the entry point, for a remote service or a local folder.

A local folder is served by an embedded server on a loopback port, so local and remote
work go through the same HTTP code path.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import os
import re
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from nsframe import _frames
from nsframe._client import Client
from nsframe._client.config import DEFAULT_RETRIES, DEFAULT_TIMEOUT, RetryConfig, TimeoutConfig
from nsframe._client.exchange import Transport
from nsframe._client.inprocess import EmbeddedTransport
from nsframe._models import Transaction
from nsframe._namespace import Namespace, list_all
from nsframe._protocol.defaults import API_KEY_ENV, DEFAULT_ROOT, TOKEN_ENV, URL_ENV
from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id, split_id
from nsframe._protocol.keys import key_columns
from nsframe._table import Table
from nsframe.exceptions import AlreadyExistsError, NsframeError

if TYPE_CHECKING:
    import pandas as pd

_default: Connection | None = None


class Connection:
    """A connection to one nsframe (or any Namespace REST) service.

    Create it with `nsframe.connect`. Use it as a context manager, or call `close`, to
    release the HTTP pool (and stop the embedded server, if it started one).
    """

    def __init__(self, client: Client, *, local_root: str | None = None,
                 stack: contextlib.ExitStack | None = None) -> None:
        self._client = client
        self.local_root = local_root
        self._stack = stack or contextlib.ExitStack()
        # Stop the embedded server once the client is garbage collected: tables hold the
        # client, not the connection, so `nsframe.connect(path)["t"]` keeps its server for
        # as long as the table is used. (Nothing the stack holds may refer to the client.)
        self._finalizer = weakref.finalize(client, self._stack.close)

    @property
    def client(self) -> Client:
        """The HTTP client (one method per REST operation).

        Example:
            >>> conn.client.page_size = 500     # the `limit` each page of a listing asks for
            >>> conn.client.table_exists("items")
            True
        """
        return self._client

    @property
    def url(self) -> str:
        """The service's base URL (for a folder, the embedded server's loopback URL).

        Example:
            >>> conn.url.startswith("http://127.0.0.1:")   # the embedded server's loopback URL
            True
        """
        return self._client.base_url

    @property
    def delimiter(self) -> str:
        """The delimiter that joins the parts of an id (``$``).

        Example:
            >>> conn.delimiter
            '$'
        """
        return self._client.delimiter

    def close(self) -> None:
        """Close the HTTP pool and stop the embedded server, if any.

        Example:
            >>> other = nsframe.connect("./other-data")
            >>> other.close()
            >>> other.closed
            True
        """
        self._client.close()
        self._finalizer()

    @property
    def closed(self) -> bool:
        """Whether the connection was closed (`close`, or the end of a ``with`` block).

        Example:
            >>> conn.closed
            False
        """
        return self._client.closed or not self._finalizer.alive

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ namespaces
    def namespace(self, ident: str | tuple[str, ...] | list[str] = ()) -> Namespace:
        """A lazy handle on a namespace (``"a$b"``, or ``()`` for the root).

        Example:
            >>> conn.namespace("lab$2024")
            Namespace('lab$2024')
            >>> conn.namespace("lab$2024").parts
            ('lab', '2024')
        """
        return Namespace(self._client, ident)

    def namespaces(self, parent: str | tuple[str, ...] = ()) -> list[str]:
        """Full ids of the namespaces directly under ``parent`` (the root by default).

        Example:
            >>> _ = conn.create_namespace("lab")
            >>> _ = conn.create_namespace("lab$2024")
            >>> conn.namespaces(), conn.namespaces("lab")
            (['lab'], ['lab$2024'])
        """
        return self.namespace(parent).namespaces()

    def create_namespace(self, ident: str, *, mode: str = "create", exist_ok: bool = False,
                         properties: Mapping[str, str] | None = None) -> Namespace:
        """Create a namespace and return a handle on it.

        As LanceDB's ``create_table``: ``mode="create"`` raises
        `NamespaceAlreadyExistsError` if it exists, unless ``exist_ok=True`` (then the
        existing one is returned); ``mode="overwrite"`` replaces its properties.

        Example:
            >>> conn.create_namespace("lab", properties={"owner": "ana"})
            Namespace('lab')
            >>> conn.create_namespace("lab", exist_ok=True).properties()
            {'owner': 'ana'}
        """
        ns = self.namespace(ident)
        self._client.create_namespace(ns.id, mode=wire_create_mode(mode, exist_ok),
                                      properties=properties)
        return ns

    def drop_namespace(self, ident: str, *, mode: str = "fail",
                       behavior: str = "restrict") -> None:
        """Drop a namespace. ``mode="skip"`` ignores a missing one; ``behavior="cascade"``
        drops its tables and namespaces too.

        Example:
            >>> _ = conn.create_namespace("lab")
            >>> conn.drop_namespace("lab")
            >>> conn.drop_namespace("lab", mode="skip")     # already gone: nothing to do
            >>> conn.namespaces()
            []
        """
        self.namespace(ident).drop(mode=mode, behavior=behavior)

    # ------------------------------------------------------------------ tables
    def table_names(self, namespace: str | None = None) -> list[str]:
        """Full ids of the tables in ``namespace``, or of every table when None.

        Example:
            >>> _ = conn.create_namespace("lab")
            >>> _ = conn.create_table("lab$runs", {"id": [1]})
            >>> conn.table_names(), conn.table_names("lab")
            (['items', 'lab$runs'], ['lab$runs'])
        """
        if namespace is None:
            return sorted(list_all(lambda t: self._client.list_all_tables(page_token=t),
                                   "tables"))
        ns = self.namespace(namespace)
        return [join_id([*ns.parts, name], self.delimiter) for name in ns.table_names()]

    def tables(self, namespace: str | None = None) -> pd.DataFrame:
        """The tables as a DataFrame with columns ``id``, ``namespace`` and ``name``.

        Example:
            >>> conn.tables()
                  id namespace   name
            0  items         $  items
        """
        import pyarrow as pa

        ids = self.table_names(namespace)
        parts = [split_id(i, self.delimiter) for i in ids]
        frame = pa.table({
            "id": ids,
            "namespace": [join_id(p[:-1], self.delimiter) for p in parts],
            "name": [p[-1] for p in parts],
        })
        return _frames.to_pandas(frame)

    def table(self, ident: str | tuple[str, ...] | list[str]) -> Table:
        """A lazy handle on table ``ident`` (``"db$items"``); nothing is sent yet.

        Example:
            >>> conn.table("items")          # or conn["items"]; no request yet
            Table('items', main)
            >>> conn["items"].count_rows()
            3
        """
        return Table(self._client, ident)

    def __getitem__(self, ident: str) -> Table:
        return self.table(ident)

    def open_table(self, ident: str) -> Table:
        """A handle on an existing table (LanceDB's name); raises if it does not exist.

        Example:
            >>> conn.open_table("items").count_rows()
            3
            >>> conn.open_table("nope")
            Traceback (most recent call last):
            ...
            nsframe.exceptions.TableNotFoundError: Table 'nope' does not exist. (request id ...)
        """
        table = self.table(ident)
        table.describe()
        return table

    def create_table(self, ident: str, data: Any = None, schema: Any = None, *,
                     mode: str = "create", exist_ok: bool = False,
                     properties: Mapping[str, str] | None = None,
                     primary_key: str | Sequence[str] | None = None,
                     embedding: Any = None, embed_batch_size: int | None = None) -> Table:
        """Create a table from ``data`` and/or an Arrow ``schema``; return a handle on it.

        With neither, the table is only declared; the first insert creates it.
        As in LanceDB: ``mode="create"`` raises `TableAlreadyExistsError` if the table
        exists, unless ``exist_ok=True`` (then the existing table is returned, its rows
        unchanged); ``mode="overwrite"`` replaces its rows with ``data``.

        ``primary_key`` (a column, or several) is the key merge_insert matches rows by:
        concurrent merges on it never leave two rows of one key. It is kept in the schema
        as Lance's ``lance-schema:unenforced-primary-key`` field metadata, which a
        ``schema`` may carry instead; key columns are non-null.

        ``embedding``: an embedding function (``text`` to ``vector``), an
        ``EmbeddingFunctionConfig`` naming other columns, or a list of them. The table
        records them in its schema metadata (LanceDB's format), fills missing vectors on
        every insert (``embed_batch_size`` texts per call), and embeds text queries. A
        ``schema`` that already records functions (one made by LanceDB) works the same.
        See docs/embeddings.md.

        Example:
            >>> runs = conn.create_table("runs", pd.DataFrame({"id": [1, 2], "loss": [0.5, 0.25]}))
            >>> runs.count_rows()
            2
            >>> conn.create_table("runs", {"id": [3], "loss": [0.1]}, mode="overwrite").count_rows()
            1
            >>> conn.create_table("runs", exist_ok=True).count_rows()      # the existing one
            1
            >>> empty = conn.create_table("empty", schema=pa.schema([("id", pa.int64())]))
            >>> empty.schema
            id: int64
        """
        wire_mode = wire_create_mode(mode, exist_ok)
        table = self.table(ident)
        check_dotted_id(self._client, ident, table)
        if primary_key is not None and data is None and schema is None:
            raise ValueError("A primary key needs the table's columns: pass data or schema.")
        body = _arrow_body(data, schema, primary_key, ident, embedding=embedding,
                           embed_batch_size=embed_batch_size)
        if body is None:
            try:
                self._client.declare_table(table.id, properties=properties)
            except AlreadyExistsError:
                if wire_mode != "exist_ok":
                    raise
        else:
            self._client.create_table(table.id, body, mode=wire_mode, properties=properties)
        return table

    def drop_table(self, ident: str) -> None:
        """Drop a table and all its versions.

        Example:
            >>> conn.drop_table("items")
            >>> conn.table_names()
            []
        """
        self._client.drop_table(self.table(ident).id)

    def rename_table(self, ident: str, new_ident: str) -> Table:
        """Give table ``ident`` the id ``new_ident`` (``"name"`` keeps its namespace,
        ``"ns$name"`` moves it); its data, versions and tags stay. Returns the renamed
        table.

        Raises:
            TableAlreadyExistsError: if ``new_ident`` is taken.

        Example:
            >>> _ = conn.create_namespace("archive")
            >>> conn.rename_table("items", "archive$items_2024")
            Table('archive$items_2024', main)
            >>> conn.table_names()
            ['archive$items_2024']
        """
        table = self.table(ident)
        parts = split_id(new_ident, self.delimiter)
        namespace = parts[:-1] if len(parts) > 1 else list(table.namespace)
        self._client.rename_table(table.id, parts[-1], new_namespace=namespace)
        return self.table([*namespace, parts[-1]])

    def register_table(self, ident: str, location: str, *, mode: str = "create",
                       properties: Mapping[str, str] | None = None) -> Table:
        """File an existing Lance dataset as table ``ident``. ``location`` is where the
        server finds it: on nsframe's server, a path inside its storage root (relative
        to the root, or absolute). ``mode="overwrite"`` replaces a table of that id.

        Example:
            >>> location = tbl.location
            >>> conn.deregister_table("items") == location       # off the catalog, data kept
            True
            >>> conn.register_table("items_again", location).count_rows()
            3
        """
        table = self.table(ident)
        self._client.register_table(table.id, location, mode=mode, properties=properties)
        return table

    def deregister_table(self, ident: str) -> str | None:
        """Remove table ``ident`` from the catalog but keep its data; returns where the
        data is (to register it again), when the server says.

        Example:
            >>> location = conn.deregister_table("items")
            >>> conn.table_names()
            []
            >>> conn.register_table("items", location).count_rows()   # filed again
            3
        """
        answer = self._client.deregister_table(self.table(ident).id)
        location = answer.get("location")
        return location if isinstance(location, str) and location else None

    # ------------------------------------------------------------------ extended deployment
    def database_table_names(self) -> list[str]:
        """Full ids of every table of the selected database, through the extended
        deployment's ``GET /v1/tables`` (the database is ``database=`` of `connect`, or
        the one the host name selects).

        Example:
            >>> conn.database_table_names()     # the database `connect(database=...)` selects
            ['items']
        """
        return sorted(list_all(lambda t: self._client.list_database_tables(page_token=t),
                               "tables"))

    def create_database_table(self, ident: str, data: Any = None, schema: Any = None, *,
                              primary_key: str | Sequence[str] | None = None) -> Table:
        """Create a table through the extended deployment's ``POST /v1/tables/<name>``,
        from ``data`` and/or an Arrow ``schema``; with neither the request has no body,
        which (on nsframe's server) only declares the table. ``primary_key`` as in
        `create_table`.

        Example:
            >>> conn.create_database_table("events", {"id": [1, 2]}).count_rows()
            2
            >>> conn.database_table_names()
            ['events', 'items']
        """
        table = self.table(ident)
        self._client.create_database_table(table.id,
                                           _arrow_body(data, schema, primary_key, ident))
        return table

    def transaction(self, transaction_id: str) -> Transaction:
        """The state of a long-running operation, by the ``transaction_id`` it returned.

        Example:
            >>> done = tbl.restore(1)
            >>> conn.transaction(done.transaction_id).status
            'Succeeded'
        """
        data = self._client.describe_transaction(transaction_id)
        return Transaction.from_json(transaction_id, data)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        where = f", local={self.local_root!r}" if self.local_root else ""
        state = ", closed" if self.closed else ""
        return f"Connection({self._client!r}{where}{state})"

    def _repr_html_(self) -> str:
        try:
            names = self.namespaces()
            listing = "".join(f"<li><code>{html.escape(n)}</code></li>" for n in names)
            body = f"{len(names)} namespaces<ul>{listing}</ul>"
        except NsframeError as exc:
            body = f"unavailable ({html.escape(type(exc).__name__)})"
        return f"<div><b>nsframe</b> <code>{html.escape(repr(self))}</code>: {body}</div>"


def _is_remote(url: str) -> bool:
    return url.startswith(("http://", "https://"))


CREATE_MODES = ("create", "overwrite")


def wire_create_mode(mode: str, exist_ok: bool) -> str:
    """The create mode the REST contract knows (create, exist_ok, overwrite) from
    LanceDB's pair ``mode="create"|"overwrite"`` and ``exist_ok``.

    ``mode="exist_ok"``, the REST spelling, still works but warns: it is deprecated.
    """
    if not isinstance(mode, str) or mode.lower() not in (*CREATE_MODES, "exist_ok"):
        raise ValueError(f"mode must be 'create' or 'overwrite' (with exist_ok=True to "
                         f"keep an existing one); got {mode!r}.")
    mode = mode.lower()
    if mode == "exist_ok":
        warnings.warn("mode='exist_ok' is deprecated: pass exist_ok=True (as LanceDB does).",
                      DeprecationWarning, stacklevel=3)
        return "exist_ok"
    if exist_ok and mode == "overwrite":
        raise ValueError("exist_ok=True keeps an existing one and mode='overwrite' replaces "
                         "it: pass one of them.")
    return "exist_ok" if exist_ok else mode


def check_dotted_id(client: Client, ident: Any, table: Table) -> None:
    """Refuse ``"lab.items"`` (a root table named "lab.items") when a namespace ``lab``
    exists: SQL habits write a dot where nsframe's ids use the delimiter."""
    if not isinstance(ident, str) or table.namespace or "." not in ident:
        return
    pieces = ident.split(".")
    for cut in range(len(pieces) - 1, 0, -1):
        namespace = join_id(pieces[:cut], client.delimiter)
        if client.namespace_exists(namespace):
            meant = join_id([*pieces[:cut], ".".join(pieces[cut:])], client.delimiter)
            raise ValueError(
                f"Did you mean {meant!r}? Table ids join namespace and name with "
                f"{client.delimiter!r}, so {ident!r} would be a table named {ident!r} in "
                f"the root namespace, although namespace {namespace!r} exists. To make "
                f"that root table anyway, pass conn.table(({ident!r},))."
            )


# A URL scheme (RFC 3986), and a bare host:port that lacks one.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+:\d+(/.*)?$")
_LOCAL_SCHEMES = ("http", "https", "file")


def check_url(url: str) -> None:
    """Refuse a string that is neither an http(s) URL, a file URL nor a plain path, before
    anything is written: ``"htp://host"`` would otherwise become a folder ``htp:``."""
    if _HOST_PORT.match(url):
        raise ValueError(f"{url!r} has no scheme: did you mean 'http://{url}'? "
                         "connect() takes an http(s):// URL or a local folder.")
    match = _SCHEME.match(url)
    if match is None or re.match(r"^[A-Za-z]:[\\/]", url):  # no scheme, or C:\ on Windows
        return
    scheme = match.group(1).lower()
    if scheme in _LOCAL_SCHEMES:
        return
    rest = url[match.end():]
    close = difflib.get_close_matches(scheme, _LOCAL_SCHEMES[:2], n=1, cutoff=0.5)
    if close:
        hint = f"did you mean {close[0] + ':' + rest!r}?"
    else:
        hint = (f"for a local folder, pass its path (such as {'./' + rest.lstrip('/')!r}); "
                "for a service, its http(s):// URL.")
    raise ValueError(f"nsframe.connect() cannot use {url!r}: the scheme {scheme!r} is not "
                     f"http, https or file; {hint}")


def _serve_in_thread() -> Any:
    # Imported here only: a remote connection never loads the server's dependencies.
    try:
        from nsframe.server import serve_in_thread
    except ImportError as exc:
        raise ImportError(
            f"nsframe.connect() with a local folder runs an embedded server, which needs "
            f"the server extra ({exc.name or exc} is missing): pip install 'nsframe[server]' "
            "(from a checkout: pip install '.[server]'). Or pass the http:// URL of a "
            "running service."
        ) from exc
    return serve_in_thread


def _arrow_body(data: Any, schema: Any, primary_key: str | Sequence[str] | None = None,
                label: str = "", *, embedding: Any = None,
                embed_batch_size: int | None = None) -> Iterator[bytes] | None:
    """A create request's body: ``data`` (or an empty table of ``schema``) as an Arrow
    IPC stream, or None when there is neither (a request with no body). The stream's
    schema declares ``primary_key``, or the key ``schema``'s field metadata declares."""
    if data is None and schema is None:
        if embedding is not None:
            raise ValueError("embedding= needs data or a schema to create the table from.")
        return None
    import pyarrow as pa

    if embedding is not None or (isinstance(schema, pa.Schema) and schema.metadata
                                 and b"embedding_functions" in schema.metadata):
        from nsframe.embeddings import _apply

        source = _apply.create_source(data, schema, _apply.as_configs(embedding), label,
                                      batch_size=embed_batch_size)
    elif data is None:
        source = _frames.Source(schema, iter(()))
    else:
        reader = _frames.to_reader(data, schema)
        source = _frames.Source(reader.schema, iter(reader))
    if primary_key is None and isinstance(schema, pa.Schema):
        # to_reader keeps the data's own field metadata: the schema's key counts too.
        primary_key = key_columns(schema) or None
    return _frames.ipc_stream_chunks(source.with_key(primary_key, label).reader())


def connect(
    url: str | os.PathLike[str] | None = None,
    *,
    api_key: str | None = None,
    token: str | None = None,
    database: str | None = None,
    headers: Mapping[str, str] | None = None,
    context: Mapping[str, str] | None = None,
    delimiter: str = DEFAULT_DELIMITER,
    timeout: float | None = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    retry_config: RetryConfig | None = None,
    timeout_config: TimeoutConfig | None = None,
    transport: Transport | None = None,
) -> Connection:
    """Connect to a service, or serve a local folder and connect to that.

    Args:
        url: ``http(s)://host:port`` of a service; or a local folder (a path or a
            ``file://`` URL) to serve with an embedded server (default ``$NSFRAME_URL``,
            else ``./nsframe-data``).
        api_key: Sent as ``x-api-key`` (default ``$NSFRAME_API_KEY``).
        token: Sent as ``Authorization: Bearer`` (default ``$NSFRAME_TOKEN``).
        database: Sent as ``x-service-database``.
        headers: Extra headers for every request.
        context: Sent as ``x-service-ctx-<key>`` headers.
        delimiter: The id delimiter (``$``).
        timeout: Shorthand for ``TimeoutConfig(timeout=t, connect_timeout=t,
            read_timeout=t)``: seconds for the whole call, and for each connect and read.
        retries: Shorthand for ``RetryConfig(retries=n)``: retries of idempotent calls on
            429, 502, 503, 504 or a broken connection.
        retry_config: How calls are retried (`nsframe.RetryConfig`); instead of
            ``retries``.
        timeout_config: How long calls wait (`nsframe.TimeoutConfig`); instead of
            ``timeout``.
        transport: What carries the requests (`nsframe.transport.Transport`): default
            an `HTTPTransport` for a URL, and for a local folder an `EmbeddedTransport`
            that calls the embedded server in process (pass an `HTTPTransport` to go
            through its loopback socket instead).

    Raises:
        ValueError: ``url`` has a scheme other than http, https or file (``"htp://..."``),
            or is a ``host:port`` without one; nothing is written then. Also when
            ``retries`` and ``retry_config`` (or ``timeout`` and ``timeout_config``)
            are both given.
        ImportError: a local folder needs the server extra, which is not installed.

    Example:
        >>> local = nsframe.connect("./my-data")     # a folder: an embedded server serves it
        >>> local.create_table("items", {"id": [1, 2]}).count_rows()
        2
        >>> local.close()
        >>> nsframe.connect("http://127.0.0.1:2333", api_key="secret")   # sends nothing yet
        Connection(Client('http://127.0.0.1:2333', api_key=***))
    """
    if url is None:
        url = os.environ.get(URL_ENV) or DEFAULT_ROOT
    url = os.fspath(url)
    check_url(url)
    api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    options: dict[str, Any] = {"database": database, "headers": headers, "context": context,
                               "delimiter": delimiter, "timeout": timeout, "retries": retries,
                               "retry_config": retry_config,
                               "timeout_config": timeout_config}
    if _is_remote(url):
        return Connection(Client(url, api_key=api_key, token=token, transport=transport,
                                 **options))
    # A file URL is percent-encoded (``Path.as_uri()`` writes a space as %20).
    root = unquote(url[len("file://"):]) if url.startswith("file://") else url
    serve_in_thread = _serve_in_thread()
    Path(root).mkdir(parents=True, exist_ok=True)
    stack = contextlib.ExitStack()
    try:
        running = stack.enter_context(serve_in_thread(root, token=token or "generate"))
        if transport is None:
            # The same server code answers in process, without the socket (inprocess.py).
            transport = EmbeddedTransport(running.app)
        stack.callback(transport.close)
        client = Client(running.url, api_key=api_key, token=running.token,
                        transport=transport, **options)
    except BaseException:
        stack.close()
        raise
    return Connection(client, local_root=str(Path(root).resolve()), stack=stack)


def set_default(conn: Connection | None) -> None:
    """Make ``conn`` the connection that accessors and string table names use."""
    global _default
    if conn is not None and not isinstance(conn, Connection):
        raise TypeError(f"set_default() takes a Connection, got {type(conn).__name__}.")
    _default = conn


def get_default() -> Connection:
    """The connection set by `set_default`; raises if there is none."""
    if _default is None or _default.closed:
        raise RuntimeError(
            "No default connection: call nsframe.set_default(nsframe.connect(...)) first."
        )
    return _default
