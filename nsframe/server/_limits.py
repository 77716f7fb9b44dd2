"""What one request may ask of the server: time, nesting, result sizes and capacity.

Each limit protects the server from a client, hostile or broken, that would otherwise
wedge it (a filter whose parse time doubles with each level of nesting, an upload that
stops half-way, a search for every row of a table). Every refusal names the limit and
its value, so that a user who needs more knows what to raise. docs/server.md lists them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    # Every SQL expression (filter, predicate, projection, update value, new column,
    # merge condition; `_http.expressions`), before Lance parses it, which cannot be
    # interrupted: its time is exponential in the nesting of `NOT (` (0.8 s at 34 levels),
    # its stack overflows (SIGSEGV) on a chain of 575 nested operators (`x::bigint::...`),
    # and it grows with the length. docs/server.md "Expression limits" has the figures.
    max_predicate_bytes: int = 256 * 1024
    max_predicate_depth: int = 32
    max_expression_chain: int = 50
    max_expression_operators: int = 10_000
    max_expression_terms: int = 50_000
    # Seconds a query, count or scan may run; then it stops with a 400 naming this limit.
    query_timeout: float = 60.0
    # A search's k + offset (vector, full text, hybrid; a batch search counts every query
    # vector): Lance holds that many rows at once. 10,000 is LanceDB Cloud's limit too.
    # Filter-only scans stream, and are bounded by query_timeout instead.
    max_k: int = 10_000
    # The most names one page of a listing holds (a larger `limit` gets this many).
    max_page_size: int = 1000
    # Request bodies: the longest pause between two chunks, and the longest whole upload.
    body_idle_timeout: float = 30.0
    body_timeout: float = 3600.0
    # A body must bring at least this many bytes per second, averaged over every stretch
    # of `body_rate_window` seconds after its first (nginx's and Apache's MinRate): one
    # that trickles a byte at a time never trips the idle timeout, and held its upload
    # slot for the whole body_timeout. The window is as long as the idle timeout, so a
    # client that pauses between batches no longer than that is not cut off.
    body_min_rate_bytes: int = 1024
    body_rate_window: float = 30.0
    # Without a credential header, a JSON body is read for `identity` only up to this size:
    # an unauthenticated client cannot make the server buffer more.
    max_identity_body_bytes: int = 64 * 1024
    # Worker threads per kind of work (see `_http.capacity`): metadata, data-heavy reads
    # and scans, uploads. A full lane answers 503 after `queue_timeout` seconds.
    light_slots: int = 16
    heavy_slots: int = 8
    upload_slots: int = 8
    queue_timeout: float = 10.0
    # The most upload slots one credential, or one client address, holds at once, and
    # never all of them (`upload_share`): one client cannot lock every writer out.
    upload_slots_per_client: int = 4

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"The limit {item.name} must be a number above 0, "
                                 f"got {value!r}")

    @property
    def upload_share(self) -> int:
        """The upload slots one client may hold: `upload_slots_per_client`, but always
        one fewer than `upload_slots` (when there is more than one)."""
        return max(1, min(self.upload_slots_per_client, self.upload_slots - 1))

    @classmethod
    def from_mapping(cls, raw: dict[str, Any], where: str = "[limits]") -> Limits:
        """Limits from a config file's ``[limits]`` table (sizes may be ``"256KiB"``)."""
        from nsframe.server._config import parse_size  # _config imports this module

        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(raw) - set(known)
        if unknown:
            raise ValueError(f"{where}: unknown limit(s) {sorted(unknown)}; known: "
                             + ", ".join(known))
        values: dict[str, Any] = {}
        for name, value in raw.items():
            if name.endswith("_bytes") and isinstance(value, str):
                value = parse_size(value)
            elif known[name].type == "int" and isinstance(value, float) and value.is_integer():
                value = int(value)
            values[name] = value
        return cls(**values)
