"""Answers of the service as frozen dataclasses; each keeps the JSON it came from in ``raw``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from nsframe._protocol.defaults import MAIN_BRANCH


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_object(data: Any, key: str) -> dict[str, Any]:
    """The object member ``key`` of ``data``; {} when either is missing or not an object."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _main(branch: Any) -> str:
    return branch if isinstance(branch, str) and branch else MAIN_BRANCH


@dataclass(frozen=True)
class Version:
    """One version of a table (upstream ``TableVersion``)."""

    version: int
    timestamp: datetime | None = None
    manifest_path: str | None = None
    manifest_size: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The tags on this version (of its branch), when the listing asked for them.
    tags: tuple[str, ...] = field(default=(), compare=False)

    @property
    def operation(self) -> str:
        """What the version did, as Lance names it (``Append``, ``Delete``, ...)."""
        return self.metadata.get("operation", "")

    @property
    def num_rows(self) -> int | None:
        """The rows of the table at this version, when the server says."""
        rows = self.metadata.get("total_rows")
        return int(rows) if rows is not None and rows.isdigit() else None

    def __repr__(self) -> str:
        when = self.timestamp.strftime("%Y-%m-%d %H:%M:%S") if self.timestamp else "?"
        tags = f", tags={list(self.tags)}" if self.tags else ""
        return (f"Version({self.version}, {when}, {self.operation or '?'}, "
                f"rows={self.num_rows}{tags})")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Version:
        millis = _int(data.get("timestamp_millis"))
        stamp = datetime.fromtimestamp(millis / 1000, tz=timezone.utc) if millis is not None \
            else None
        if stamp is None and isinstance(data.get("timestamp"), str):
            try:
                stamp = datetime.fromisoformat(data["timestamp"].replace("Z", "+00:00"))
            except ValueError:
                stamp = None
        return cls(
            version=int(data["version"]),
            timestamp=stamp,
            manifest_path=data.get("manifest_path"),
            manifest_size=_int(data.get("manifest_size")),
            metadata=_str_map(data.get("metadata")),
            raw=data,
        )


@dataclass(frozen=True)
class Tag:
    """A named pointer to a version of a branch (``branch`` is ``"main"`` for main)."""

    name: str
    version: int
    branch: str = MAIN_BRANCH
    manifest_size: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> Tag:
        return cls(name=name, version=int(data["version"]), branch=_main(data.get("branch")),
                   manifest_size=_int(data.get("manifestSize", data.get("manifest_size"))),
                   raw=data)


@dataclass(frozen=True)
class Branch:
    """A named line of versions, forked from ``parent_branch`` at ``parent_version``."""

    name: str
    parent_branch: str = MAIN_BRANCH
    parent_version: int | None = None
    created_at: datetime | None = None
    manifest_size: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> Branch:
        seconds = _int(data.get("createAt", data.get("create_at")))
        return cls(
            name=name,
            parent_branch=_main(data.get("parentBranch", data.get("parent_branch"))),
            parent_version=_int(data.get("parentVersion", data.get("parent_version"))),
            created_at=datetime.fromtimestamp(seconds, tz=timezone.utc)
            if seconds is not None else None,
            manifest_size=_int(data.get("manifestSize", data.get("manifest_size"))),
            metadata=_str_map(data.get("metadata")),
            raw=data,
        )


@dataclass(frozen=True)
class IndexInfo:
    """An index of a table (upstream ``IndexContent``)."""

    name: str
    columns: tuple[str, ...]
    index_type: str | None = None
    status: str | None = None
    uuid: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexInfo:
        return cls(
            name=str(data.get("index_name") or data.get("name") or ""),
            columns=tuple(str(c) for c in data.get("columns") or ()),
            index_type=data.get("index_type"),
            status=data.get("status"),
            uuid=data.get("index_uuid"),
            raw=data,
        )


@dataclass(frozen=True)
class TableInfo:
    """What describe says about a table."""

    name: str
    namespace: tuple[str, ...]
    version: int | None
    num_rows: int | None = None
    is_only_declared: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], ident: tuple[str, ...]) -> TableInfo:
        stats = json_object(data, "stats")
        return cls(
            name=str(data.get("table") or ident[-1]),
            namespace=tuple(data.get("namespace") or ident[:-1]),
            version=_int(data.get("version")),
            num_rows=_int(stats.get("num_rows")),
            is_only_declared=bool(data.get("is_only_declared")),
            properties=_str_map(data.get("properties")),
            raw=data,
        )


@dataclass(frozen=True)
class FragmentStatistics:
    """How a table's rows are spread over its fragments (LanceDB's name).

    ``lengths`` summarises the rows per fragment (``min``, ``max``, ``mean``, ``p25``,
    ``p50``, ``p75``, ``p99``); it is empty, and ``num_small_fragments`` None, when the
    server does not report them.
    """

    num_fragments: int | None = None
    num_small_fragments: int | None = None
    lengths: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> FragmentStatistics:
        data = data if isinstance(data, dict) else {}
        return cls(
            num_fragments=_int(data.get("num_fragments")),
            num_small_fragments=_int(data.get("num_small_fragments")),
            lengths={str(k): v for k, v in json_object(data, "lengths").items()
                     if isinstance(v, (int, float)) and not isinstance(v, bool)},
        )


@dataclass(frozen=True)
class TableStatistics:
    """Size and layout of a table (upstream ``GetTableStatsResponse``, LanceDB's
    ``TableStatistics``)."""

    total_bytes: int | None
    num_rows: int | None
    num_indices: int | None
    fragment_stats: FragmentStatistics = field(default_factory=FragmentStatistics)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableStatistics:
        return cls(
            total_bytes=_int(data.get("total_bytes")),
            num_rows=_int(data.get("num_rows")),
            num_indices=_int(data.get("num_indices")),
            fragment_stats=FragmentStatistics.from_json(data.get("fragment_stats")),
            raw=data,
        )


@dataclass(frozen=True)
class WriteResult:
    """The outcome of a write: the version it committed and how many rows it touched."""

    version: int | None
    num_rows: int | None = None
    transaction_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], rows_key: str) -> WriteResult:
        txn = data.get("transaction_id")
        return cls(version=_int(data.get("version")), num_rows=_int(data.get(rows_key)),
                   transaction_id=txn if isinstance(txn, str) else None, raw=data)


@dataclass(frozen=True)
class Transaction:
    """The state of a long-running operation."""

    id: str
    status: str
    properties: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, ident: str, data: dict[str, Any]) -> Transaction:
        return cls(id=ident, status=str(data.get("status")),
                   properties=_str_map(data.get("properties")), raw=data)


@dataclass(frozen=True)
class Ref:
    """Which state of a table a handle reads: a branch (None = main), pinned at a version
    (None = latest). ``tag`` records the tag a pinned version came from, for display."""

    branch: str | None = None
    version: int | None = None
    tag: str | None = None

    @property
    def read_only(self) -> bool:
        return self.version is not None

    def describe(self) -> str:
        parts = [f"branch {self.branch!r}" if self.branch else MAIN_BRANCH]
        if self.tag is not None:
            parts.append(f"tag {self.tag!r} (version {self.version})")
        elif self.version is not None:
            parts.append(f"version {self.version}")
        return ", ".join(parts)


def vector_dimensions(schema: pa.Schema) -> dict[str, int]:
    """Columns that hold fixed-size lists of numbers (vectors), with their dimension."""
    dims: dict[str, int] = {}
    for f in schema:
        t = f.type
        if pa.types.is_fixed_size_list(t) and (pa.types.is_floating(t.value_type)
                                                or pa.types.is_integer(t.value_type)):
            dims[f.name] = t.list_size
    return dims
