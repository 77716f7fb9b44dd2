"""`Table`: a lazy handle on one table of the service, at a branch, version or tag.

A handle holds only (client, id, ref) and asks the server when a method needs to know
something. Views (`at`, `branch`) are new handles; they never change the one they came from.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from nsframe import _engines, _frames
from nsframe._changes import TableChanges
from nsframe._client import Client
from nsframe._client.wire import paged
from nsframe._history import History
from nsframe._models import (
    IndexInfo,
    Ref,
    TableInfo,
    TableStatistics,
    Tag,
    Version,
    WriteResult,
    json_object,
    vector_dimensions,
)
from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe._protocol.ids import join_id, split_id
from nsframe._protocol.keys import key_columns
from nsframe._protocol.schema_json import schema_from_base64, schema_from_json
from nsframe._query import Query, new_query
from nsframe._refs import Branches, Tags
from nsframe._upload import (
    AUTO_PROGRESS_ROWS,
    DEFAULT_CHUNK_BYTES,
    Elapsed,
    Progress,
    ProgressArg,
    upload,
)
from nsframe.embeddings.registry import read_specs
from nsframe.exceptions import (
    NotFoundError,
    NsframeError,
    ReadOnlyTableError,
    ResponseDecodeError,
    VectorDimensionError,
)

if TYPE_CHECKING:
    import daft
    import pandas as pd
    import polars as pl
    import ray.data
    from lance import LanceDataset

DEFAULT_MAX_ROWS = 10_000_000
QUERY_TYPES = ("auto", "vector", "fts", "hybrid")
DEFAULT_PAGE_ROWS = 100_000
_INDEX_COLUMN = re.compile(r"__index_level_\d+__")


class Table(TableChanges):
    """A table of the service, seen at one branch (main by default) and maybe one version.

    Get one from `Connection.table` (or ``conn["ns$name"]``); nothing is sent until a
    method needs the server.
    """

    def __init__(self, client: Client, ident: Sequence[str] | str, ref: Ref | None = None) -> None:
        if isinstance(ident, str):
            ident = split_id(ident, client.delimiter)
        self._client = client
        self._parts: tuple[str, ...] = tuple(ident)
        if not self._parts or not all(self._parts):
            raise ValueError(f"A table id needs a non-empty name, got {ident!r}.")
        self._ref = ref or Ref()

    # ------------------------------------------------------------------ identity
    @property
    def id(self) -> str:
        """The table id as a string, parts joined by the delimiter (``"db$items"``).

        Example:
            >>> tbl.id, conn["lab$runs"].id
            ('items', 'lab$runs')
        """
        return join_id(self._parts, self._client.delimiter)

    @property
    def name(self) -> str:
        """The table's own name: the last part of its id.

        Example:
            >>> conn["lab$runs"].name
            'runs'
        """
        return self._parts[-1]

    @property
    def namespace(self) -> tuple[str, ...]:
        """The parts of the id of the namespace holding the table.

        Example:
            >>> conn["lab$2024$runs"].namespace
            ('lab', '2024')
        """
        return self._parts[:-1]

    @property
    def ref(self) -> Ref:
        """The branch / version / tag this handle reads.

        Example:
            >>> tbl.ref, tbl.at(version=1).ref
            (Ref(branch=None, version=None, tag=None), Ref(branch=None, version=1, tag=None))
        """
        return self._ref

    @property
    def branch_name(self) -> str:
        """The branch this handle reads and writes (``"main"`` for the main branch).

        Example:
            >>> tbl.branch_name, tbl.branch("dev").branch_name
            ('main', 'dev')
        """
        return self._ref.branch or MAIN_BRANCH

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Table) and other._client is self._client
                and other._parts == self._parts and other._ref == self._ref)

    def __hash__(self) -> int:
        return hash((self._parts, self._ref))

    # ------------------------------------------------------------------ views
    def at(self, version: int | None = None, *, tag: str | None = None) -> Table:
        """A read-only view of this table at a version, or at the version a tag names.

        Raises:
            TypeError: if neither or both of ``version`` and ``tag`` are given.
            TagNotFoundError: if the tag does not exist.

        Example:
            >>> _ = tbl.insert({"id": [4], "name": ["mate"], "vector": [[0.3, 0.7]]})   # version 2
            >>> old = tbl.at(version=1)
            >>> old.count_rows(), tbl.count_rows()
            (3, 4)
            >>> old.insert({"id": [5], "name": ["chai"], "vector": [[0.2, 0.8]]})
            Traceback (most recent call last):
            ...
            nsframe.exceptions.ReadOnlyTableError: Cannot insert into table 'items' at main, ...
        """
        if (version is None) == (tag is None):
            raise TypeError("at() takes exactly one of version= or tag=.")
        if tag is not None:
            found = self._client.tag_version(self.id, tag)
            return self._view(Ref(branch=normalize_branch(found.get("branch")),
                                  version=int(found["version"]), tag=tag))
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"version must be an integer >= 0, got {version!r}.")
        return self._view(Ref(branch=self._ref.branch, version=version))

    def checkout(self, version: int | None = None, *, tag: str | None = None,
                 branch: str | None = None) -> Table:
        """A new handle at a version, tag or branch (this one is unchanged).

        Example:
            >>> _ = tbl.tags.create("first")
            >>> tbl.checkout(1), tbl.checkout(tag="first").version
            (Table('items', main, version 1), 1)
        """
        if branch is not None and version is None and tag is None:
            return self.branch(branch)
        view = self.at(version, tag=tag)
        return view if branch is None else view._view(replace(view._ref, branch=branch))

    def branch(self, name: str) -> Table:
        """A handle on the latest version of branch ``name``; writes go to that branch.

        Example:
            >>> dev = tbl.branches.create("dev")
            >>> tbl.branch("dev").insert({"id": [4], "name": ["mate"], "vector": [[0.3, 0.7]]})
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> tbl.branch("dev").count_rows(), tbl.count_rows()
            (4, 3)
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"branch() needs a branch name; {MAIN_BRANCH!r} is the main branch.")
        return self._view(Ref(branch=normalize_branch(name)))

    def latest(self) -> Table:
        """A writable handle on the latest version of this handle's branch.

        Example:
            >>> old = tbl.at(version=1)
            >>> old.latest()
            Table('items', main)
        """
        return self._view(Ref(branch=self._ref.branch))

    def _view(self, ref: Ref) -> Table:
        return Table(self._client, self._parts, ref)

    def _writable(self, action: str) -> None:
        if self._ref.read_only:
            raise ReadOnlyTableError(
                f"Cannot {action} table {self.id!r} at {self._ref.describe()}: a version or tag "
                "view is read-only. Use tbl.latest() (or tbl.branch(name)) to write."
            )

    # ------------------------------------------------------------------ metadata
    def describe(self) -> TableInfo:
        """What the server says about this table at this handle's branch and version.

        Example:
            >>> info = tbl.describe()
            >>> info.version, info.num_rows
            (1, 3)
        """
        data = self._client.describe_table(self.id, version=self._ref.version,
                                           branch=self._ref.branch)
        return TableInfo.from_json(data, self._parts)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (exact when the server sends ``arrow_schema``).

        Example:
            >>> tbl.schema
            id: int64
            name: string
            vector: fixed_size_list<item: float>[2]
              child 0, item: float
        """
        return _schema_of(self._client.describe_table(
            self.id, version=self._ref.version, branch=self._ref.branch))

    @property
    def primary_key(self) -> list[str]:
        """The columns of the table's primary key, in key order (empty when it declares
        none): the key merge_insert matches rows by, safely under concurrent merges.

        Example:
            >>> tbl.primary_key
            []
            >>> conn.create_table("keyed", {"id": [1, 2]}, primary_key="id").primary_key
            ['id']
        """
        return key_columns(self.schema)

    @property
    def location(self) -> str | None:
        """Where the table's Lance dataset lives (describe's ``location``), for pylance,
        Daft or Ray to open directly; None while the table is only declared.

        Example:
            >>> tbl.location.endswith(".lance")    # a folder of the server's root here
            True
        """
        found = self._client.describe_table(self.id, branch=self._ref.branch).get("location")
        return str(found) if found else None

    def storage_options(self) -> dict[str, str]:
        """The storage options a reader of `location` needs (Lance's names: ``aws_region``,
        ``aws_endpoint``, ...), as the server vends them with describe; ``{}`` for a table
        in a folder, which needs none.

        Raises:
            StorageOptionsNotVendedError: the table is in an object store and the server
                does not vend its options (``nsframe serve --vend-storage-options`` does).

        Example:
            >>> tbl.storage_options()          # a folder of the server's root here
            {}
        """
        return _engines.vended_options(self._described(), self.id)

    def to_lance(self, *, storage_options: Mapping[str, str] | None = None) -> LanceDataset:
        """The table's Lance dataset, opened at its location (pylance), at this handle's
        branch and version: the latest, or the pinned version.

        The server's vended storage options are used when it vends them, updated with
        ``storage_options``; otherwise Lance finds credentials in the environment. The
        location keeps its scheme: on ``s3+ddb://`` Lance commits through the DynamoDB
        table, as the server does. Create and drop tables through the server.

        Example:
            >>> ds = tbl.to_lance()
            >>> ds.count_rows(), ds.version, ds.uri == tbl.location
            (3, 1, True)
        """
        return self._opened(storage_options)[0]

    def to_daft(self, *, storage_options: Mapping[str, str] | None = None) -> daft.DataFrame:
        """A Daft DataFrame over the table at its location (the ``engines`` extra), at
        this handle's version of the main branch, with the options `to_lance` uses.

        Daft reads in parallel on its own workers; append with ``df.write_lance(
        tbl.location, mode="append", storage_options=tbl.storage_options())``.

        Raises:
            ValueError: the handle is at a branch (Daft reads the main branch only).

        Example:
            >>> tbl.to_daft().where("id > 1").count_rows()
            2
        """
        _engines.main_branch_only(self._ref.branch, "to_daft", self.id)
        frame: daft.DataFrame = _engines.daft_frame(*self._opened(storage_options))
        return frame

    def to_ray(self, *, storage_options: Mapping[str, str] | None = None,
               **read_args: Any) -> ray.data.Dataset:
        """A Ray Dataset over the table at its location (``ray.data.read_lance``; the
        ``ray`` extra), at this handle's version of the main branch, with the options
        `to_lance` uses; ``read_args`` go to ``read_lance`` (``columns``, ``filter``, ...).

        Raises:
            ImportError: Ray Data is not installed; the message names the extra.
            ValueError: the handle is at a branch (Ray reads the main branch only).

        Example:
            >>> try:
            ...     rows = tbl.to_ray().count()       # with Ray installed
            ... except ImportError as missing:        # without: the message names the extra
            ...     rows = 3 if "nsframe[ray]" in str(missing) else str(missing)
            >>> rows
            3
        """
        _engines.main_branch_only(self._ref.branch, "to_ray", self.id)
        described = self._described()
        return _engines.ray_dataset(_engines.location_of(described, self.id),
                                    _engines.reader_options(described, storage_options),
                                    self._ref.version, **read_args)

    def _described(self) -> dict[str, Any]:
        return self._client.describe_table(self.id, version=self._ref.version,
                                           branch=self._ref.branch)

    def _opened(self, given: Mapping[str, str] | None
                ) -> tuple[LanceDataset, dict[str, str] | None]:
        """The dataset at this handle's branch and version, and the options it was opened
        with (Daft's workers reopen it with them)."""
        described = self._described()
        options = _engines.reader_options(described, given)
        ds = _engines.open_lance(_engines.location_of(described, self.id), options,
                                 branch=self._ref.branch, version=self._ref.version)
        return ds, options

    @property
    def version(self) -> int:
        """The version this handle reads: its pinned version, or the latest.

        Example:
            >>> tbl.version
            1
            >>> _ = tbl.delete("id = 1")
            >>> tbl.version, tbl.at(version=1).version
            (2, 1)
        """
        if self._ref.version is not None:
            return self._ref.version
        version = self.describe().version
        if version is None:
            raise ValueError(f"Table {self.id!r} is only declared: insert data to create it.")
        return version

    def stats(self) -> TableStatistics:
        """Bytes, rows, index count and fragment layout of the latest version of this
        handle's branch (as LanceDB's ``stats``; the operation takes no version).

        A server without the stats operation gets the same numbers from describe and the
        index list; the fragment lengths and small-fragment count are then unknown.

        Example:
            >>> stats = tbl.stats()
            >>> stats.num_rows, stats.num_indices, stats.fragment_stats.num_fragments
            (3, 0, 1)
        """
        try:
            return TableStatistics.from_json(
                self._client.table_stats(self.id, branch=self._ref.branch))
        except NotFoundError as exc:
            # A missing table raises its own subclass; the bare class means the server
            # has no such operation.
            if type(exc) is not NotFoundError:
                raise
        latest = self.latest()
        data = self._client.describe_table(self.id, branch=self._ref.branch)
        described = json_object(data, "stats")
        size = json_object(data, "metadata").get("total_files_size")
        return TableStatistics.from_json({
            "total_bytes": int(size) if isinstance(size, str) and size.isdigit() else None,
            "num_rows": described.get("num_rows"),
            "num_indices": len(latest.list_indices()),
            "fragment_stats": {"num_fragments": described.get("num_fragments")},
        })

    def count_rows(self, filter: str | None = None) -> int:
        """The number of rows, or of rows matching the SQL ``filter``.

        Example:
            >>> tbl.count_rows(), tbl.count_rows("id > 1"), len(tbl)
            (3, 2, 3)
        """
        return self._client.count_rows(self.id, predicate=filter, version=self._ref.version,
                                       branch=self._ref.branch)

    def __len__(self) -> int:
        return self.count_rows()

    # ------------------------------------------------------------------ reading
    def search(self, vector: Any = None, text: str | None = None, *,
               column: str | None = None, fts_columns: Sequence[str] | None = None,
               query_type: str = "auto") -> Query:
        """Start a query: a vector search, a full-text search (``text``), both (hybrid),
        or with neither a plain scan.

        A string as ``vector`` is read by ``query_type`` (LanceDB's words): ``"auto"``
        embeds it with the table's embedding function when it has one, else runs a
        full-text search; ``"vector"`` embeds it (an error without a function);
        ``"fts"`` always runs a full-text search; ``"hybrid"`` does both and fuses them.

        Example:
            >>> tbl.search([0.1, 0.9]).limit(1).select(["name"]).to_list()     # nearest vector
            [{'name': 'tea', '_distance': 0.0}]
            >>> tbl.search("cocoa").select(["name"]).to_list()                  # full text
            [{'name': 'cocoa', '_score': 0.98...}]
            >>> tbl.search().where("id > 2").select(["name"]).to_list()          # a filtered scan
            [{'name': 'cocoa'}]
        """
        if query_type not in QUERY_TYPES:
            raise ValueError(f"query_type must be one of {', '.join(QUERY_TYPES)}; "
                             f"got {query_type!r}.")
        if isinstance(vector, str) and query_type != "fts":
            from nsframe.embeddings import _apply

            asked = vector
            conf = _apply.query_config(self, column, required=query_type != "auto")
            if conf is not None:
                embedded = _apply.embed_queries(conf, [asked])[0]
                if query_type == "hybrid" and text is None:
                    text = asked
                query = new_query(self._client, self.id, self._ref, embedded, text,
                                  conf.vector_column, fts_columns)
                return replace(query, query_text=asked)
        elif query_type == "hybrid" and (vector is None or text is None):
            raise ValueError("A hybrid search needs a text query with an embedding function, "
                             "or both a vector and text=.")
        return new_query(self._client, self.id, self._ref, vector, text, column, fts_columns)

    def query(self) -> Query:
        """A plain scan to refine with `Query.where`/`select`/`limit`.

        Example:
            >>> tbl.query().where("id > 1").select(["name"]).to_list()
            [{'name': 'coffee'}, {'name': 'cocoa'}]
        """
        return self.search()

    def head(self, n: int = 5) -> pa.Table:
        """The first ``n`` rows as a pyarrow Table (as LanceDB's ``head``).

        Example:
            >>> tbl.head(2).select(["id", "name"]).to_pydict()
            {'id': [1, 2], 'name': ['tea', 'coffee']}
        """
        return self.search().limit(n).to_arrow() if n else self.schema.empty_table()

    def to_arrow(self, *, columns: Sequence[str] | None = None, filter: str | None = None,
                 max_rows: int | None = DEFAULT_MAX_ROWS,
                 page_rows: int = DEFAULT_PAGE_ROWS, progress: ProgressArg = None) -> pa.Table:
        """Read the whole table (or the rows matching ``filter``), page by page.

        All pages read the same version, even if someone writes meanwhile. ``progress``:
        True for a bar, a callable ``(rows_done, bytes_done)``, or None (a bar for more
        than a million rows when someone watches).

        Raises:
            ValueError: when more than ``max_rows`` rows match (pass ``max_rows=None``
                to read them anyway).

        Example:
            >>> tbl.to_arrow(columns=["id", "name"], filter="id < 3").to_pydict()
            {'id': [1, 2], 'name': ['tea', 'coffee']}
        """
        if page_rows <= 0:
            raise ValueError(f"page_rows must be > 0, got {page_rows}.")
        # A result that fits in the first page needs no count: with a filter, counting
        # is a scan of its own. One row more than max_rows tells an oversized result.
        first_limit = page_rows if max_rows is None else min(page_rows, max_rows + 1)
        pinned = self
        first, read_version = self._read_query(pinned, filter, columns) \
            .limit(first_limit).to_arrow_with_version()
        complete = first.num_rows < first_limit
        if not complete and not self._ref.read_only:
            # Further pages read the version the first one did. A server that does not
            # say which it was: pin one now and read the first page again.
            if read_version is None:
                pinned = self.at(self.version)
                first = self._read_query(pinned, filter, columns).limit(first_limit) \
                    .to_arrow(progress=False)
                complete = first.num_rows < first_limit
            else:
                pinned = self.at(read_version)
        query = self._read_query(pinned, filter, columns)
        total = first.num_rows if complete else pinned.count_rows(filter)
        if max_rows is not None and total > max_rows:
            raise ValueError(
                f"Table {self.id!r} has {total} matching rows, more than max_rows={max_rows}: "
                "pass a filter, a larger max_rows, or max_rows=None."
            )
        meter = Progress(progress, total_rows=total, desc=f"read {self.id}",
                         show_by_default=total > AUTO_PROGRESS_ROWS)
        pages = [first]
        offset = first.num_rows
        try:
            meter.update(first.num_rows, first.nbytes)
            while not complete and offset < total:
                page = query.limit(page_rows).offset(offset).to_arrow(progress=False)
                if page.num_rows == 0:
                    break
                pages.append(page)
                offset += page.num_rows
                meter.update(page.num_rows, page.nbytes)
            return pa.concat_tables(pages) if len(pages) > 1 else first
        finally:
            meter.close()

    @staticmethod
    def _read_query(table: Table, filter: str | None,
                    columns: Sequence[str] | None) -> Query:
        query = table.search()
        if filter:
            query = query.where(filter)
        if columns is not None:
            query = query.select(list(columns))
        return query

    def to_pandas(self, *, columns: Sequence[str] | None = None, filter: str | None = None,
                  max_rows: int | None = DEFAULT_MAX_ROWS,
                  dtype_backend: str | None = "numpy_nullable",
                  progress: ProgressArg = None) -> pd.DataFrame:
        """The whole table as a pandas DataFrame (see `to_arrow`).

        Example:
            >>> tbl.to_pandas(columns=["id", "name"])
               id    name
            0   1     tea
            1   2  coffee
            2   3   cocoa
        """
        table = self.to_arrow(columns=columns, filter=filter, max_rows=max_rows,
                              progress=progress)
        return _frames.to_pandas(table, dtype_backend=dtype_backend)

    def to_polars(self, *, columns: Sequence[str] | None = None, filter: str | None = None,
                  max_rows: int | None = DEFAULT_MAX_ROWS,
                  progress: ProgressArg = None) -> pl.DataFrame:
        """The whole table as a polars DataFrame (see `to_arrow`).

        Example:
            >>> tbl.to_polars(columns=["id", "name"]).shape
            (3, 2)
        """
        return _frames.to_polars(self.to_arrow(columns=columns, filter=filter,
                                               max_rows=max_rows, progress=progress))

    # ------------------------------------------------------------------ writing
    def insert(self, data: Any, mode: str = "append", *,
               chunk_size: int = DEFAULT_CHUNK_BYTES, progress: ProgressArg = None,
               vector_columns: Mapping[str, int] | None = None,
               embed_batch_size: int | None = None) -> WriteResult:
        """Add rows (``mode="append"``) or replace them all (``mode="overwrite"``).

        Args:
            data: a pandas or polars DataFrame or LazyFrame, a pyarrow Table or
                RecordBatchReader, anything with ``__arrow_c_stream__``, a list of
                dicts, a dict of columns, or an iterable of batches or frames.
            chunk_size: Bytes per request; a larger input is sent as several inserts,
                each its own version.
            progress: True for a progress bar, False for none, a callable
                ``(rows_done, bytes_done)``, or None: a bar for large inserts when
                someone watches.
            vector_columns: ``{column: dimension}`` to make into vectors; by default
                equal-length float lists in frames are found by themselves.
            embed_batch_size: Texts per call of the table's embedding function, which
                fills a vector column the data lacks (docs/embeddings.md).

        Raises:
            PartialWriteError: a chunk after the first failed; the error says how many
                rows were committed and at which version.
            ValueError: a vector column cannot be one (nothing is sent).

        Example:
            >>> tbl.insert(pd.DataFrame({"id": [4], "name": ["mate"], "vector": [[0.3, 0.7]]}))
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> tbl.insert([{"id": 5, "name": "chai", "vector": [0.2, 0.8]}])      # rows work too
            WriteResult(version=3, num_rows=1, transaction_id=None)
            >>> tbl.insert({"id": [9], "name": ["water"], "vector": [[0.0, 0.0]]}, mode="overwrite")
            WriteResult(version=4, num_rows=1, transaction_id=None)
            >>> tbl.count_rows()
            1
        """
        if mode.lower() not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', got {mode!r}.")
        return self._upload(data, mode=mode.lower(), create=None, chunk_size=chunk_size,
                            progress=progress, vector_columns=vector_columns,
                            embed_batch_size=embed_batch_size)

    # LanceDB's name for insert.
    add = insert

    def _upload(self, data: Any, *, mode: str, create: str | None, chunk_size: int,
                progress: ProgressArg, vector_columns: Mapping[str, int] | None,
                primary_key: str | Sequence[str] | None = None,
                embed_batch_size: int | None = None, embedding: Any = None) -> WriteResult:
        # Shared by insert and the DataFrame accessors (``create`` is a create mode, which
        # declares ``primary_key``).
        self._writable("insert into")
        arrow_input = isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader))
        source = _frames.to_source(data, vector_columns=vector_columns)
        conform = not arrow_input and mode == "append" and create is None
        # One describe serves both steps (none for a table this call creates).
        target = self._schema_or_none() if create is None else None
        source = self._embedded(source, embed_batch_size, progress, embedding, target=target,
                                overwrite=mode == "overwrite")
        if create is not None:
            source = source.with_key(primary_key, self.id)
        if conform:
            source = self._conform(source, target=target)
        return upload(self._client, self.id, source, mode=mode, create=create,
                      branch=self._ref.branch, chunk_size=chunk_size, progress=progress)

    def _schema_or_none(self) -> pa.Schema | None:
        try:
            return self.schema
        except (NsframeError, ValueError):
            return None

    def _embedded(self, source: _frames.Source, batch_size: int | None,
                  progress: ProgressArg, embedding: Any = None, *,
                  target: pa.Schema | bool | None = True,
                  overwrite: bool = False) -> _frames.Source:
        """``source`` with the vectors the table's embedding functions fill in (a table
        being created gets ``embedding``'s functions recorded as well; an overwrite keeps
        the table's). ``target``: the table's schema, if already fetched."""
        from nsframe.embeddings import _apply

        if embedding is not None:
            configs = _apply.as_configs(embedding)
            filled = _apply.fill_vectors(source, configs, self.id, batch_size=batch_size,
                                         progress=progress)
            return _apply.with_metadata(filled, configs)
        schema = self._schema_or_none() if target is True else target
        specs = read_specs(schema.metadata) if isinstance(schema, pa.Schema) else []
        if not specs:
            return source
        filled = _apply.fill_vectors(source, specs, self.id, batch_size=batch_size,
                                     progress=progress)
        if overwrite and not read_specs(filled.schema.metadata):
            filled = _apply.with_metadata(filled, [], specs)
        return filled

    @property
    def embedding_functions(self) -> dict[str, Any]:
        """Vector column -> the `EmbeddingFunctionConfig` that fills it, from the table's
        schema metadata (LanceDB's ``embedding_functions``); building one raises when this
        client cannot run it.

        Example:
            >>> tbl.embedding_functions
            {}
        """
        from nsframe.embeddings import _apply

        return {s.vector_column: _apply.build(s, self.id) for s in _apply.table_specs(self)}

    def _conform(self, source: _frames.Source, *,
                 target: pa.Schema | bool | None = True) -> _frames.Source:
        # Frames pick their own Arrow types (large_string, int32...): cast to the table's
        # where that is lossless, so an append from polars matches a table made by pandas.
        # An unnamed index stored by pandas is dropped if the table has no column for it.
        # ``target``: the table's schema, if already fetched (None: no table).
        if target is True:
            target = self._schema_or_none()
        if not isinstance(target, pa.Schema):
            return source
        names = [n for n in source.schema.names
                 if n in target.names or not _INDEX_COLUMN.fullmatch(n)]
        dims = {n: d for n, d in vector_dimensions(target).items() if n in names}
        fields = [target.field(n) if n in target.names else source.schema.field(n)
                  for n in names]
        wanted = pa.schema(fields, metadata=source.schema.metadata)
        if wanted.equals(source.schema):
            return source
        batches = iter(source.batches)
        first = next(batches, None)

        seen = [0]  # rows before the current batch, for the row an error names

        def cast(batch: pa.RecordBatch) -> list[pa.RecordBatch]:
            for name, dim in dims.items():
                self._check_vectors(batch.column(name), name, dim, seen[0])
            seen[0] += batch.num_rows
            table: pa.Table = pa.Table.from_batches([batch]).select(names).cast(wanted)
            return list(table.to_batches())

        try:
            head = cast(first) if first is not None else []
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            # Not castable: send as is, and let the server name each difference.
            again = itertools.chain([first] if first is not None else [], batches)
            return _frames.Source(source.schema, again, nbytes=source.nbytes,
                                  num_rows=source.num_rows)

        def rest() -> Iterator[pa.RecordBatch]:
            yield from head
            for batch in batches:
                try:
                    yield from cast(batch)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise ValueError(f"Cannot cast the data to the types of table "
                                     f"{self.id!r}: {exc}") from exc

        return _frames.Source(wanted, rest(), nbytes=source.nbytes,
                              num_rows=source.num_rows)

    def _check_vectors(self, column: Any, name: str, dim: int, first_row: int) -> None:
        """Raise `VectorDimensionError` for the first vector of ``column`` that is not
        ``dim`` numbers (pyarrow's own error names neither column nor table)."""
        kind = column.type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)
                or pa.types.is_fixed_size_list(kind)):
            return  # not lists at all: the cast, or the server, says what is wrong
        lengths = pc.list_value_length(column)
        wrong = pc.and_kleene(pc.is_valid(lengths), pc.not_equal(lengths, dim))
        if not pc.any(wrong).as_py():
            return
        row = int(pc.index(wrong, True).as_py())
        found = int(lengths[row].as_py())
        raise VectorDimensionError(
            f"Column {name!r} of table {self.id!r} holds vectors of {dim} numbers, but row "
            f"{first_row + row} of the data has {found}: give every vector {dim} numbers "
            "(the same embedding model as the table's), or write to another table.",
            table=self.id, column=name, expected=dim, found=found, row=first_row + row)

    def delete(self, where: str) -> WriteResult:
        """Delete the rows matching the SQL condition ``where``.

        Example:
            >>> tbl.delete("name = 'coffee'")
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> tbl.count_rows()
            2
        """
        self._writable("delete from")
        if not isinstance(where, str) or not where.strip():
            raise ValueError("delete() needs a SQL condition; use \"true\" to delete every row.")
        answer = self._client.delete(self.id, where, branch=self._ref.branch)
        return WriteResult.from_json(answer, "num_deleted_rows")

    def restore(self, version: int | str) -> WriteResult:
        """Make an older version (a number, or a tag name) the latest one.

        Example:
            >>> _ = tbl.delete("id > 1")                  # version 2: a mistake
            >>> tbl.restore(1)                            # version 1's rows, as version 3
            WriteResult(version=3, num_rows=None, transaction_id='...')
            >>> tbl.count_rows()
            3
        """
        self._writable("restore")
        if isinstance(version, str):
            version = int(self._client.tag_version(self.id, version)["version"])
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"restore() takes a version >= 0 or a tag name, got {version!r}.")
        answer = self._client.restore(self.id, version, branch=self._ref.branch)
        return WriteResult.from_json(answer, "num_rows")

    def optimize(self, *, target_rows_per_fragment: int | None = None,
                 optimize_indices: bool = True, progress: bool | None = None) -> WriteResult:
        """Compact small fragments into large ones and bring indexes up to date (as LanceDB's
        ``optimize``). Worth running after many small inserts; older versions stay readable.

        ``WriteResult.raw`` holds the counts of fragments and files removed and added.
        ``progress`` shows the time taken so far, as for `create_index`.

        Example:
            >>> _ = tbl.insert({"id": [4], "name": ["mate"], "vector": [[0.3, 0.7]]})
            >>> tbl.stats().fragment_stats.num_fragments
            2
            >>> _ = tbl.optimize()
            >>> tbl.stats().fragment_stats.num_fragments, tbl.count_rows()
            (1, 4)
        """
        self._writable("optimize")
        body: dict[str, Any] = {"optimize_indices": optimize_indices}
        if target_rows_per_fragment is not None:
            body["target_rows_per_fragment"] = target_rows_per_fragment
        if self._ref.branch is not None:
            body["branch"] = self._ref.branch
        with Elapsed(f"optimize {self.id}", progress):
            answer = self._client.optimize(self.id, body)
        return WriteResult.from_json(answer, "num_rows")

    # ------------------------------------------------------------------ versions
    def versions(self) -> History:
        """Every version of this handle's branch, oldest first, with the tags on each.

        A list of `Version` that displays as a table (version, timestamp, operation,
        rows, tags) and converts with ``.to_pandas()`` / ``.to_polars()``.

        Example:
            >>> _ = tbl.delete("id = 2")
            >>> [(v.version, v.operation, v.num_rows) for v in tbl.versions()]
            [(1, 'Overwrite', 3), (2, 'Delete', 2)]
        """
        found = [Version.from_json(v)
                 for page in paged(lambda token: self._client.list_versions(
                     self.id, branch=self._ref.branch, page_token=token))
                 for v in page.get("versions") or []]
        on_version: dict[int, list[str]] = {}
        for tag in self.tags.list().values():
            if tag.branch == self.branch_name:
                on_version.setdefault(tag.version, []).append(tag.name)
        return History(replace(v, tags=tuple(sorted(on_version.get(v.version, []))))
                       for v in sorted(found, key=lambda v: v.version))

    # LanceDB's name for versions.
    list_versions = versions

    def history(self) -> pd.DataFrame:
        """The versions as a pandas DataFrame: version, timestamp, operation, details, rows, tags
        (as deltalake's ``history()``, oldest first).

        Example:
            >>> _ = tbl.delete("id = 2")
            >>> tbl.history()[["version", "operation", "rows"]]
               version  operation  rows
            0        1  Overwrite     3
            1        2     Delete     2
        """
        return self.versions().to_pandas()

    def describe_version(self, version: int | None = None) -> Version:
        """One version of this handle's branch: ``version``, else the pinned one, else
        the latest.

        Raises:
            VersionNotFoundError: if the branch has no such version.

        Example:
            >>> _ = tbl.delete("id = 2")
            >>> tbl.describe_version(1).operation, tbl.describe_version().version
            ('Overwrite', 2)
        """
        if version is None:
            version = self._ref.version
        answer = self._client.describe_version(self.id, version=version,
                                               branch=self._ref.branch)
        entry = answer.get("version")
        if not isinstance(entry, dict):
            raise ResponseDecodeError(f"describe_version of {self.id!r} answered {answer!r}, "
                                      "without a version object.")
        return Version.from_json(entry)

    @property
    def tags(self) -> Tags:
        """The table's tags, as in LanceDB: ``tbl.tags.create("v1", 3)``, ``.list()``,
        ``.get_version("v1")``, ``.update(...)``, ``.delete(...)``. Calling it,
        ``tbl.tags()``, is ``tbl.tags.list()``.

        Example:
            >>> tbl.tags.create("v1")
            Tag(name='v1', version=1, branch='main', manifest_size=None)
            >>> tbl.tags.get_version("v1"), list(tbl.tags.list())
            (1, ['v1'])
        """
        return Tags(self)

    @property
    def branches(self) -> Branches:
        """The table's named branches: ``tbl.branches.create("dev")`` (a handle on the
        new branch), ``.list()``, ``.delete(...)``. ``tbl.branches()`` is ``.list()``.

        Example:
            >>> dev = tbl.branches.create("dev")
            >>> list(tbl.branches.list()), tbl.branches.get_version("dev")
            (['dev'], 1)
        """
        return Branches(self)

    # The methods below are the older spellings of tbl.tags.* and tbl.branches.*.
    def create_tag(self, tag: str, version: int | None = None) -> Tag:
        """Same as ``tbl.tags.create(tag, version)``.

        Example:
            >>> tbl.create_tag("v1", 1)
            Tag(name='v1', version=1, branch='main', manifest_size=None)
        """
        return self.tags.create(tag, version)

    def update_tag(self, tag: str, version: int) -> Tag:
        """Same as ``tbl.tags.update(tag, version)``.

        Example:
            >>> _ = tbl.create_tag("best", 1)
            >>> _ = tbl.delete("id = 1")
            >>> tbl.update_tag("best", 2)
            Tag(name='best', version=2, branch='main', manifest_size=None)
        """
        return self.tags.update(tag, version)

    def delete_tag(self, tag: str) -> None:
        """Same as ``tbl.tags.delete(tag)``.

        Example:
            >>> _ = tbl.create_tag("v1", 1)
            >>> tbl.delete_tag("v1")
            >>> tbl.tags.list()
            {}
        """
        self.tags.delete(tag)

    def tag_version(self, tag: str) -> int:
        """Same as ``tbl.tags.get_version(tag)``.

        Example:
            >>> _ = tbl.create_tag("v1", 1)
            >>> tbl.tag_version("v1")
            1
        """
        return self.tags.get_version(tag)

    def create_branch(self, name: str, from_version: int | None = None) -> Table:
        """Same as ``tbl.branches.create(name, from_version)``: a handle on the branch.

        Example:
            >>> tbl.create_branch("dev")
            Table('items', dev)
        """
        return self.branches.create(name, from_version)

    def delete_branch(self, name: str) -> None:
        """Same as ``tbl.branches.delete(name)``.

        Example:
            >>> _ = tbl.create_branch("dev")
            >>> tbl.delete_branch("dev")
            >>> tbl.branches.list()
            {}
        """
        self.branches.delete(name)

    # ------------------------------------------------------------------ indexes
    def create_index(self, column: str = "vector", index_type: str = "IVF_PQ", *,
                     name: str | None = None, distance_type: str | None = None,
                     progress: bool | None = None, **params: Any) -> IndexInfo:
        """Build an index on ``column`` (vector types: IVF_PQ, IVF_FLAT, IVF_HNSW_SQ...;
        scalar: BTREE, BITMAP, LABEL_LIST; FTS) and return what was built. Extra
        ``params`` (num_partitions, num_sub_vectors, with_position...) are passed through.

        A build can take minutes; ``progress`` shows the time it has taken so far (None:
        when someone watches and it takes more than a second; True; False).

        Example:
            >>> import numpy as np
            >>> rng = np.random.default_rng(0)
            >>> big = conn.create_table("big", {"id": np.arange(500),
            ...                                  "vector": rng.random((500, 8)).tolist()})
            >>> info = big.create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=2,
            ...                         distance_type="cosine")
            >>> info.name, info.index_type
            ('vector_idx', 'IVF_PQ')
            >>> big.search(rng.random(8).tolist()).limit(2).select(["id"]).to_pandas().shape
            (2, 2)
        """
        self._writable("index")
        kind = index_type.upper()
        body: dict[str, Any] = {"column": column, "index_type": kind,
                                **{k: v for k, v in params.items() if v is not None}}
        if name is not None:
            body["name"] = name
        if distance_type is not None:
            body["distance_type"] = distance_type
        if self._ref.branch is not None:
            body["branch"] = self._ref.branch
        with Elapsed(f"create_index {kind} on {self.id}.{column}", progress):
            answer = self._client.create_index(self.id, body)
        return _built_index(answer, column, kind, name)

    def create_scalar_index(self, column: str, index_type: str = "BTREE", *,
                            name: str | None = None,
                            progress: bool | None = None) -> IndexInfo:
        """Build a scalar index (BTREE, BITMAP, LABEL_LIST) to speed up filters.

        Example:
            >>> tbl.create_scalar_index("id").index_type
            'BTREE'
            >>> tbl.create_scalar_index("name", "BITMAP").name
            'name_idx'
        """
        self._writable("index")
        kind = index_type.upper()
        body: dict[str, Any] = {"column": column, "index_type": kind}
        if name is not None:
            body["name"] = name
        if self._ref.branch is not None:
            body["branch"] = self._ref.branch
        with Elapsed(f"create_scalar_index {kind} on {self.id}.{column}", progress):
            answer = self._client.create_index(self.id, body, scalar=True)
        return _built_index(answer, column, kind, name)

    def create_fts_index(self, column: str, *, name: str | None = None,
                         progress: bool | None = None, **params: Any) -> IndexInfo:
        """Build a full-text index on a string column.

        Example:
            >>> tbl.create_fts_index("name")
            IndexInfo(name='name_idx', columns=('name',), index_type='FTS', status=None, uuid=None)
            >>> tbl.search("cocoa").select(["id", "name"]).to_list()
            [{'id': 3, 'name': 'cocoa', '_score': 0.98...}]
        """
        return self.create_index(column, "FTS", name=name, progress=progress, **params)

    def list_indices(self) -> list[IndexInfo]:
        """The indexes of the table.

        Example:
            >>> _ = tbl.create_scalar_index("id")
            >>> [(i.name, i.index_type) for i in tbl.list_indices()]
            [('id_idx', 'BTREE')]
        """
        found = [IndexInfo.from_json(i)
                 for page in paged(lambda token: self._client.list_indices(
                     self.id, version=self._ref.version, branch=self._ref.branch,
                     page_token=token))
                 for i in page.get("indexes") or []]
        return sorted(found, key=lambda i: i.name)

    def index_stats(self, name: str) -> dict[str, Any]:
        """Statistics of one index, as the server reports them.

        Example:
            >>> _ = tbl.create_scalar_index("id")
            >>> tbl.index_stats("id_idx")["num_indexed_rows"]
            3
        """
        return self._client.index_stats(self.id, name)

    def drop_index(self, name: str) -> None:
        """Remove an index.

        Example:
            >>> _ = tbl.create_scalar_index("id")
            >>> tbl.drop_index("id_idx")
            >>> tbl.list_indices()
            []
        """
        self._writable("drop an index of")
        self._client.drop_index(self.id, name)

    # ------------------------------------------------------------------ display
    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        try:
            data = self._client.describe_table(self.id, version=self._ref.version,
                                               branch=self._ref.branch)
        except NsframeError as exc:
            return f"unavailable: {type(exc).__name__}", []
        info = TableInfo.from_json(data, self._parts)
        if info.is_only_declared or data.get("schema") is None:
            return "declared, no data yet", []
        rows = f"{info.num_rows} rows" if info.num_rows is not None else "rows unknown"
        head = f"version {info.version}, {rows}"
        schema = _schema_of(data)
        dims = vector_dimensions(schema)
        fields = [(f.name, str(f.type) + (f"  (vector, dim {dims[f.name]})"
                                          if f.name in dims else "")) for f in schema]
        return head, fields

    def _where(self) -> str:
        return self._ref.describe() if self._ref.read_only else self.branch_name

    def __repr__(self) -> str:
        # No request: a repr must answer at once, even with the server down (a traceback
        # or a debugger shows it). describe() and the notebook's HTML repr ask the server.
        return f"Table({self.id!r}, {self._where()})"

    def _repr_html_(self) -> str:
        head, fields = self._summary()
        rows = "".join(f"<tr><td>{html.escape(n)}</td><td><code>{html.escape(k)}</code></td></tr>"
                       for n, k in fields)
        return (f"<div><b>nsframe Table</b> <code>{html.escape(self.id)}</code> "
                f"({html.escape(self._where())}): {html.escape(head)}"
                f"<table><tr><th>column</th><th>type</th></tr>{rows}</table></div>")


def _built_index(answer: dict[str, Any], column: str, kind: str,
                 name: str | None) -> IndexInfo:
    """What a create-index answer says, as the `IndexInfo` that `list_indices` would give."""
    found = answer.get("index_name")
    return IndexInfo(name=found if isinstance(found, str) else name or f"{column}_idx",
                     columns=(column,), index_type=kind, raw=answer)


def _schema_of(data: dict[str, Any]) -> pa.Schema:
    encoded = data.get("arrow_schema")
    if isinstance(encoded, str) and encoded:
        return schema_from_base64(encoded)
    schema = data.get("schema")
    if not isinstance(schema, dict):
        raise ValueError("The table has no schema yet (it is only declared): insert data first.")
    return schema_from_json(schema)
