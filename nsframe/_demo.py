"""`nsframe demo` (what `make demo` runs): the main job on the embedded server, in frames.

It starts the embedded server over a fresh directory, writes the sample corpus that
ships with nsframe from a pandas DataFrame (``df.ns.to_table``), runs a vector, a
full-text, a filtered and a hybrid search, makes a mistake, and undoes it with time
travel and restore. Each step prints what it did and the frame it got back.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from typing import Any

SHOWN = ["id", "category", "title"]


def _say(step: str, frame: Any = None) -> None:
    print(f"\n== {step}")
    if frame is not None:
        print(frame.to_string(index=False) if hasattr(frame, "to_string") else frame)


def run(root: str | None = None) -> int:
    import pandas as pd

    import nsframe
    from nsframe.datasets import load_sample

    pd.set_option("display.width", 120)
    pd.set_option("display.max_colwidth", 60)
    with ExitStack() as stack:
        if root is None:
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="nsframe-demo-"))
        conn = stack.enter_context(nsframe.connect(root))
        print(f"nsframe {nsframe.__version__}: embedded server at {conn.url}, data in {root}")

        conn.create_namespace("demo", exist_ok=True)
        frame = load_sample().to_pandas()  # a plain pandas DataFrame, vectors as arrays
        texts = frame.ns.to_table("demo$texts", mode="overwrite", conn=conn)
        _say(f"df.ns.to_table: {texts.count_rows()} sample texts in 'demo$texts' "
             f"(version {texts.version})", conn.tables("demo"))
        _say("The first rows", texts.search().select([*SHOWN, "rating"]).limit(5).to_pandas())

        texts.create_index("vector", "IVF_FLAT", distance_type="cosine", num_partitions=16)
        texts.create_fts_index("text")

        probe = texts.search().where("title LIKE '%sourdough%'").limit(1).to_list()[0]
        _say(f"Vector search: the 5 texts nearest to #{probe['id']} ({probe['title']!r})",
             texts.search(probe["vector"]).distance_type("cosine").select(SHOWN)
             .limit(5).to_pandas())
        _say("Full-text search for 'telescope'",
             texts.search(text="telescope").select(SHOWN).limit(5).to_pandas())
        _say("Filtered search: texts rated 4.5 or more, nearest to the probe",
             texts.search(probe["vector"]).distance_type("cosine")
             .where("rating >= 4.5", prefilter=True)
             .select([*SHOWN, "rating"]).limit(5).to_pandas())
        _say("Hybrid search: the probe's vector and the words 'banana bread'",
             texts.search(probe["vector"], text="banana bread").select(SHOWN)
             .limit(5).to_pandas())

        good = texts.version
        texts.create_tag("clean", good)
        texts.delete("category = 'finance' OR category = 'music'")
        _say(f"A clean-up gone wrong: version {texts.version} has {texts.count_rows()} rows; "
             f"tag 'clean' still has {texts.at(tag='clean').count_rows()}",
             pd.DataFrame([{"version": v.version, "operation": v.metadata.get("operation", "")}
                           for v in texts.versions()]))
        texts.restore("clean")
        _say(f"Restored tag 'clean' as version {texts.version}: rows per category",
             texts.to_pandas(columns=["category"]).value_counts("category")
             .rename("rows").reset_index())
    return 0
