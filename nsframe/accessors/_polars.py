"""``df.ns`` on polars DataFrames and ``lf.ns`` on LazyFrames."""

from __future__ import annotations

import polars as pl

from nsframe.accessors._common import FrameAccessor


@pl.api.register_dataframe_namespace("ns")
class PolarsNs(FrameAccessor):
    """nsframe methods on a polars DataFrame: ``df.ns.insert("db$items")``."""


@pl.api.register_lazyframe_namespace("ns")
class PolarsLazyNs(FrameAccessor):
    """nsframe methods on a polars LazyFrame; inserts stream it, never collecting it whole."""
