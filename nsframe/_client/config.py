"""`RetryConfig` and `TimeoutConfig`: how a client retries and how long it waits.

The field names are LanceDB's (``lancedb.remote.RetryConfig`` / ``TimeoutConfig``) where
the idea is the same. The retry arithmetic (counts, backoff with jitter, Retry-After
parsing) is urllib3's `Retry`, used as a counter: `Transport` decides what may be
retried and sleeps itself, so that no wait outlasts the call's deadline and every
transport (HTTP, the embedded server, a user's own) retries alike.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import urllib3

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
DEFAULT_STATUSES = frozenset({429, 502, 503, 504})
# Never sleep longer than this for one retry, whatever Retry-After says.
MAX_RETRY_DELAY = 30.0


def _count(name: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"RetryConfig({name}=...) must be a whole number >= 0, got {value!r}.")


def _seconds(owner: str, name: str, value: Any) -> float | None:
    """``value`` (seconds or a timedelta) as float seconds; None stays None (no limit)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"{owner}({name}=...) must be seconds >= 0 (a number or a "
                         f"timedelta), or None for no limit; got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class RetryConfig:
    """When and how often a call is sent again.

    Args:
        retries: Retries of one call in all (default 3).
        connect_retries: Retries after the connection could not be made (the request
            never reached the server, so any call may be sent again); default ``retries``.
        read_retries: Retries of an idempotent call whose connection broke after it was
            sent; default ``retries``. A read that timed out is not retried: the server
            may still be working on it.
        backoff_factor: Seconds; the wait before retry n (n >= 2) is
            ``backoff_factor * 2 ** (n - 1)`` (urllib3's formula: the first retry goes at
            once), plus the jitter, at most 30 s.
        backoff_jitter: Up to this many random seconds added to each backoff wait.
        statuses: Answers that make an idempotent call be retried (default 429, 502,
            503, 504). A ``Retry-After`` they carry is the wait instead of the backoff.

    Only idempotent calls (reads, describes, queries) are retried on a status or a broken
    connection; writes are sent once, since a retry could apply them twice.
    """

    retries: int = DEFAULT_RETRIES
    connect_retries: int | None = None
    read_retries: int | None = None
    backoff_factor: float = 0.25
    backoff_jitter: float = 0.25
    statuses: Collection[int] = DEFAULT_STATUSES  # kept as a frozenset

    def __post_init__(self) -> None:
        _count("retries", self.retries, optional=False)
        _count("connect_retries", self.connect_retries, optional=True)
        _count("read_retries", self.read_retries, optional=True)
        for name in ("backoff_factor", "backoff_jitter"):
            object.__setattr__(self, name, _seconds("RetryConfig", name, getattr(self, name))
                               or 0.0)
        statuses = self.statuses
        if isinstance(statuses, (str, bytes, int)) or not isinstance(statuses, Iterable):
            raise ValueError("RetryConfig(statuses=...) must be a collection of HTTP status "
                             f"codes, such as [429, 503]; got {statuses!r}.")
        codes = frozenset(statuses)
        bad = [c for c in codes if isinstance(c, bool) or not isinstance(c, int)
               or not 400 <= c <= 599]
        if bad:
            raise ValueError("RetryConfig(statuses=...) takes error statuses 400-599 "
                             f"(such as 429, 503); got {sorted(map(repr, bad))}.")
        object.__setattr__(self, "statuses", codes)

    def policy(self) -> urllib3.Retry:
        """The urllib3 `Retry` that counts this config's retries (it never sleeps here)."""
        return urllib3.Retry(
            total=self.retries,
            connect=self.retries if self.connect_retries is None else self.connect_retries,
            read=self.retries if self.read_retries is None else self.read_retries,
            redirect=0, status=None, other=0,
            allowed_methods=None,  # the caller says whether a call is idempotent
            status_forcelist=self.statuses,
            backoff_factor=self.backoff_factor, backoff_jitter=self.backoff_jitter,
            backoff_max=MAX_RETRY_DELAY, raise_on_status=False,
            respect_retry_after_header=True, retry_after_max=int(MAX_RETRY_DELAY),
        )


@dataclass(frozen=True)
class TimeoutConfig:
    """How long a call waits, in seconds (a number or a `datetime.timedelta`; None: no
    limit).

    Args:
        timeout: The call's deadline: all its attempts and the waits between them end
            by then (default None). Each attempt's connect and read timeouts are cut to
            what is left; a Retry-After that would end past it is not waited for.
        connect_timeout: To open a connection (default 60); as in urllib3, also each
            wait while the request's body is being sent.
        read_timeout: Between bytes of the answer, once the request is sent (default 60).
        pool_timeout: To wait for a free pooled connection, when the transport's pool
            blocks (``HTTPTransport(pool_block=True)``); default None: no limit.
    """

    # Given as seconds or a timedelta; always float seconds (or None) once made.
    timeout: float | timedelta | None = None
    connect_timeout: float | timedelta | None = DEFAULT_TIMEOUT
    read_timeout: float | timedelta | None = DEFAULT_TIMEOUT
    pool_timeout: float | timedelta | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name,
                               _seconds("TimeoutConfig", f.name, getattr(self, f.name)))

    @property
    def pool_seconds(self) -> float | None:
        """``pool_timeout`` in seconds (None: no limit)."""
        return cast(float | None, self.pool_timeout)

    def seconds(self) -> tuple[float | None, float | None, float | None]:
        """(timeout, connect_timeout, read_timeout) in seconds, None for no limit."""
        # __post_init__ made every field float seconds or None.
        return cast(tuple[float | None, float | None, float | None],
                    (self.timeout, self.connect_timeout, self.read_timeout))


def retry_config(config: RetryConfig | None, retries: int, backoff: float | None = None
                 ) -> RetryConfig:
    """The config a client uses: ``config`` itself, else the ``retries=`` shorthand."""
    if config is not None:
        if not isinstance(config, RetryConfig):
            raise TypeError("retry_config= takes an nsframe.RetryConfig, got "
                            f"{type(config).__name__}.")
        if retries != DEFAULT_RETRIES:
            raise ValueError("Pass retries= or retry_config=, not both: put the count in "
                             "RetryConfig(retries=...).")
        return config
    if backoff is None:
        return RetryConfig(retries=retries)
    return RetryConfig(retries=retries, backoff_factor=backoff)


def timeout_config(config: TimeoutConfig | None, timeout: float | None) -> TimeoutConfig:
    """The config a client uses: ``config`` itself, else the ``timeout=`` shorthand (the
    call's deadline, and the connect and read timeouts of each attempt)."""
    if config is not None:
        if not isinstance(config, TimeoutConfig):
            raise TypeError("timeout_config= takes an nsframe.TimeoutConfig, got "
                            f"{type(config).__name__}.")
        if timeout != DEFAULT_TIMEOUT:
            raise ValueError("Pass timeout= or timeout_config=, not both: put the seconds "
                             "in TimeoutConfig(timeout=..., read_timeout=...).")
        return config
    return TimeoutConfig(timeout=timeout, connect_timeout=timeout, read_timeout=timeout)
