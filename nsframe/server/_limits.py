"""What one request may ask of the server: time, nesting, result sizes and capacity.

Each limit protects the server from a client, hostile or broken, that would otherwise
wedge it (a filter whose parse time doubles with each level of nesting, an upload that
stops half-way, a search for every row of a table). Every refusal names the limit and
its value, so that a user who needs more knows what to raise. docs/server.md lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsframe.server._settings import (
    FileContext,
    Number,
    Size,
    check_fields,
    declared,
    masked_repr,
    setting,
)

# Every limit is above 0; a size may be written "256KiB".
_COUNT = Number(int, above=True, metavar="N")
_SECONDS = Number(float, above=True, metavar="SECONDS")
_SIZE = Size()


@dataclass(frozen=True)
class Limits:
    # Every SQL expression (filter, predicate, projection, update value, new column,
    # merge condition; `_http.expressions`), before Lance parses it, which cannot be
    # interrupted: its time is exponential in the nesting of `NOT (` (0.8 s at 34 levels),
    # its stack overflows (SIGSEGV) on a chain of 575 nested operators (`x::bigint::...`),
    # and it grows with the length. docs/server.md "Expression limits" has the figures.
    max_predicate_bytes: int = setting(
        256 * 1024, kind=_SIZE,
        help="the length of any SQL expression (filter, predicate, projection, update value, "
             "new column, merge condition)")
    max_predicate_depth: int = setting(
        32, kind=_COUNT,
        help="how deeply an expression nests (parentheses, brackets, CASE, NOT)")
    max_expression_chain: int = setting(
        50, kind=_COUNT,
        help="the longest chain of operators Lance nests one inside the next (a + b + c)")
    max_expression_operators: int = setting(
        10_000, kind=_COUNT,
        help="the operators of one expression, AND and OR included")
    max_expression_terms: int = setting(
        50_000, kind=_COUNT,
        help="the names and values of one expression, each value of an IN list included")
    # How many times larger than what they read an expression's growing functions (repeat,
    # lpad, array_repeat, range, replace, ...) can make a value (`_http.growth`): they are
    # evaluated for a whole batch at once, unbounded in memory. array_repeat(id, 10^8)
    # asked for 160 GB and ended the worker with SIGABRT.
    max_expression_growth: int = setting(
        100, kind=_COUNT,
        help="how many times larger the growing functions of one expression (repeat, "
             "lpad, array_repeat, range, replace, ...) may make a value")
    # Seconds a query, count or scan may run; then it stops with a 400 naming this limit.
    query_timeout: float = setting(
        60.0, kind=_SECONDS,
        help="seconds a query, count or scan may run")
    # A search's k + offset (vector, full text, hybrid; a batch search counts every query
    # vector): Lance holds that many rows at once. 10,000 is LanceDB Cloud's limit too.
    # Filter-only scans stream, and are bounded by query_timeout instead.
    max_k: int = setting(
        10_000, kind=_COUNT,
        help="rows a search ranks: k + offset, times the query vectors of a batch search")
    # The most names one page of a listing holds (a larger `limit` gets this many).
    max_page_size: int = setting(
        1000, kind=_COUNT,
        help="names in one page of a listing")
    # Request bodies: the longest pause between two chunks, and the longest whole upload.
    body_idle_timeout: float = setting(
        30.0, kind=_SECONDS,
        help="the longest pause, in seconds, between two chunks of a request body")
    body_timeout: float = setting(
        3600.0, kind=_SECONDS,
        help="the longest, in seconds, a whole request body may take to arrive")
    # A body must bring at least this many bytes per second, averaged over every stretch
    # of `body_rate_window` seconds after its first (nginx's and Apache's MinRate): one
    # that trickles a byte at a time never trips the idle timeout, and held its upload
    # slot for the whole body_timeout. The window is as long as the idle timeout, so a
    # client that pauses between batches no longer than that is not cut off.
    body_min_rate_bytes: int = setting(
        1024, kind=_SIZE,
        help="the slowest a body may arrive, in bytes per second over each body_rate_window")
    body_rate_window: float = setting(
        30.0, kind=_SECONDS,
        help="seconds over which body_min_rate_bytes is averaged")
    # Without a credential header, a JSON body is read for `identity` only up to this size:
    # an unauthenticated client cannot make the server buffer more.
    max_identity_body_bytes: int = setting(
        64 * 1024, kind=_SIZE,
        help="the JSON body read for `identity` without a credential header")
    # Worker threads per kind of work (see `_http.capacity`): metadata, data-heavy reads
    # and scans, uploads. A full lane answers 503 after `queue_timeout` seconds.
    light_slots: int = setting(
        16, kind=_COUNT,
        help="worker threads for metadata requests")
    heavy_slots: int = setting(
        8, kind=_COUNT,
        help="worker threads for data-heavy reads and scans")
    upload_slots: int = setting(
        8, kind=_COUNT,
        help="worker threads for uploads")
    queue_timeout: float = setting(
        10.0, kind=_SECONDS,
        help="seconds a request waits for a slot before a 503 with Retry-After")
    # The most upload slots one credential, or one client address, holds at once, and
    # never all of them (`upload_share`): one client cannot lock every writer out.
    upload_slots_per_client: int = setting(
        4, kind=_COUNT,
        help="the most upload slots one credential or client address holds at once")

    def __post_init__(self) -> None:
        check_fields(self)

    def __repr__(self) -> str:
        return masked_repr(self)

    @property
    def upload_share(self) -> int:
        """The upload slots one client may hold: `upload_slots_per_client`, but always
        one fewer than `upload_slots` (when there is more than one)."""
        return max(1, min(self.upload_slots_per_client, self.upload_slots - 1))

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], where: str = "[limits]") -> Limits:
        """Limits from a config file's ``[limits]`` table (sizes may be ``"256KiB"``)."""
        known = {item.name: item for item in declared(cls)}
        unknown = set(raw) - set(known)
        if unknown:
            raise ValueError(f"{where}: unknown limit(s) {sorted(unknown)}; known: "
                             + ", ".join(known))
        context = FileContext(Path("."), {})
        values = {}
        for name, value in raw.items():
            try:
                values[known[name].field] = known[name].kind.coerce(
                    known[name].kind.from_file(value, context))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{where}: {name}: {exc}") from None
        return cls(**values)
