"""``df.ns`` on pandas DataFrames."""

from __future__ import annotations

import pandas as pd

from nsframe.accessors._common import FrameAccessor


@pd.api.extensions.register_dataframe_accessor("ns")
class PandasNs(FrameAccessor):
    """nsframe methods on a pandas DataFrame: ``df.ns.insert("db$items")``.

    pandas creates the accessor on each access; it keeps only the frame.
    """
