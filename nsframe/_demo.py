"""`nsframe demo` (what `make demo` runs): the main job on the embedded server, in frames.

It starts the embedded server over a fresh directory, writes the sample corpus that
ships with nsframe from a pandas DataFrame (``df.ns.to_table``), runs a vector, a
full-text, a filtered and a hybrid search (each hit with its title and the start of its
text, so it can be checked at a glance), makes a mistake, and undoes it with time
travel and restore. Each step prints what it did and the frame it got back.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from typing import Any

SHOWN = ["id", "category", "title"]
# What a search shows: the title, and the start of the text, so each hit can be checked.
HITS = ["id", "title", "text"]


def _say(step: str, frame: Any = None) -> None:
    print(f"\n== {step}")
    if frame is not None:
        print(frame.to_string(index=False) if hasattr(frame, "to_string") else frame)


def _hits(frame: Any) -> Any:
    """Scores rounded, texts cut to a line: a result a person reads at a glance."""
    frame = frame.round({c: 3 for c in ("_distance", "_score", "_relevance_score")
                         if c in frame.columns})
    if "text" in frame.columns:
        frame["text"] = [t if len(t) <= 48 else t[:47] + "…" for t in frame["text"]]
    return frame


def run(root: str | None = None) -> int:
    import pandas as pd

    import nsframe
    from nsframe.datasets import load_sample

    pd.set_option("display.width", 160)
    pd.set_option("display.max_colwidth", 70)
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

        _say("Full-text search for 'telescope': every title names one",
             _hits(texts.search(text="telescope").select(HITS).limit(5).to_pandas()))
        probe = texts.search(text="banana bread").limit(1).to_list()[0]
        _say(f"Vector search: the 5 texts nearest in meaning to #{probe['id']} "
             f"({probe['title']!r})",
             _hits(texts.search(probe["vector"]).distance_type("cosine").select(HITS)
                   .limit(5).to_pandas()))
        _say("Filtered search: the same, among texts rated 4.5 or more (filtered first)",
             _hits(texts.search(probe["vector"]).distance_type("cosine")
                   .where("rating >= 4.5").select([*HITS, "rating"]).limit(5).to_pandas()))
        _say("Hybrid search: the probe's vector and the words 'banana bread'",
             _hits(texts.search(probe["vector"], text="banana bread").select(HITS)
                   .limit(5).to_pandas()))

        good = texts.version
        texts.tags.create("clean", good)
        texts.delete("category = 'finance' OR category = 'music'")
        _say(f"A clean-up gone wrong: version {texts.version} has {texts.count_rows()} rows; "
             f"tag 'clean' still has {texts.at(tag='clean').count_rows()}",
             texts.history().drop(columns=["timestamp"]))
        texts.restore("clean")
        _say(f"Restored tag 'clean' as version {texts.version}: rows per category",
             texts.to_pandas(columns=["category"]).value_counts("category")
             .rename("rows").reset_index())
    return 0
