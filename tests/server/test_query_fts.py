"""Full-text and hybrid queries over HTTP, with and without an FTS index."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import requests

from tests.support import assert_error
from tests.support.querykit import (
    create_table,
    fsl,
    insert,
    ok,
    post,
    query,
    query_raw,
    sentences,
    vectors,
)

ROWS = 1000


def words_of(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def make_docs(http: requests.Session, base_url: str, table: str) -> pa.Table:
    text = sentences(ROWS)
    title = sentences(ROWS, seed=2)
    data = pa.table({
        "id": pa.array(range(ROWS)),
        "text": pa.array(text),
        "title": pa.array(title),
        "vec": fsl(vectors(ROWS, 8)),
        "num": pa.array(np.arange(ROWS) % 5),
    })
    create_table(http, base_url, table, data)
    return data


@pytest.fixture(scope="module", params=["no_index", "fts_index"])
def docs(request: pytest.FixtureRequest, base_url: str,
         http: requests.Session) -> tuple[str, pa.Table, bool]:
    """The same documents, once unindexed and once with FTS indexes (positions kept)."""
    name = f"fts{request.param.replace('_', '')}"
    assert http.post(f"{base_url}/v1/namespace/{name}/create", json={}).status_code == 200
    table = f"{name}$docs"
    data = make_docs(http, base_url, table)
    indexed = request.param == "fts_index"
    if indexed:
        for column in ("text", "title"):
            ok(post(http, base_url, table, "create_scalar_index",
                    {"column": column, "index_type": "FTS", "with_position": True}))
    return table, data, indexed


def text_of(data: pa.Table, ids: list[int], column: str = "text") -> list[str]:
    values = data[column].to_pylist()
    return [values[i] for i in ids]


def structured(query_obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"full_text_query": {"structured_query": {"query": query_obj}}, **extra}


def test_string_query_finds_every_row_with_the_term(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    body = {"full_text_query": {"string_query": {"query": "thunder", "columns": ["text"]}},
            "k": ROWS}
    result = query(http, base_url, table, body)
    expected = [i for i, t in enumerate(data["text"].to_pylist()) if "thunder" in words_of(t)]
    assert sorted(result["id"].to_pylist()) == expected
    scores = result["_score"].to_pylist()
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def test_string_query_default_k_and_all_text_columns(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, {"full_text_query": {"string_query":
                                                               {"query": "candle"}}})
    assert result.num_rows == 10
    for text, title in zip(text_of(data, result["id"].to_pylist()),
                           text_of(data, result["id"].to_pylist(), "title"), strict=True):
        assert "candle" in words_of(text) | words_of(title)


def test_match_operator_and(http: requests.Session, base_url: str,
                            docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured(
        {"match": {"terms": "river ocean", "column": "text", "operator": "And"}}, k=ROWS))
    expected = [i for i, t in enumerate(data["text"].to_pylist())
                if {"river", "ocean"} <= words_of(t)]
    assert sorted(result["id"].to_pylist()) == expected and expected


def test_phrase_with_slop(http: requests.Session, base_url: str,
                          docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    exact = query(http, base_url, table, structured(
        {"phrase": {"terms": "quick fox", "column": "text"}}, k=ROWS))
    for text in text_of(data, exact["id"].to_pylist()):
        assert "quick fox" in text
    loose = query(http, base_url, table, structured(
        {"phrase": {"terms": "quick fox", "column": "text", "slop": 1}}, k=ROWS))
    assert set(exact["id"].to_pylist()) < set(loose["id"].to_pylist())
    for text in text_of(data, loose["id"].to_pylist()):
        tokens = text.split()
        assert any(tokens[i] == "quick" and "fox" in tokens[i + 1:i + 3]
                   for i in range(len(tokens)))


def test_boolean_must_and_must_not(http: requests.Session, base_url: str,
                                   docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured({"boolean": {
        "must": [{"match": {"terms": "garden", "column": "text"}}],
        "should": [],
        "must_not": [{"match": {"terms": "silver", "column": "text"}}],
    }}, k=ROWS))
    expected = [i for i, t in enumerate(data["text"].to_pylist())
                if "garden" in words_of(t) and "silver" not in words_of(t)]
    assert sorted(result["id"].to_pylist()) == expected and expected


def test_boost_demotes_negative_matches(http: requests.Session, base_url: str,
                                        docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured({"boost": {
        "positive": {"match": {"terms": "forest", "column": "text"}},
        "negative": {"match": {"terms": "dog", "column": "text"}},
        "negative_boost": 0.1,
    }}, k=ROWS))
    plain = query(http, base_url, table, structured(
        {"match": {"terms": "forest", "column": "text"}}, k=ROWS))
    plain_score = dict(zip(plain["id"].to_pylist(), plain["_score"].to_pylist(), strict=True))
    ids = result["id"].to_pylist()
    assert sorted(ids) == sorted(plain_score)
    demoted = 0
    for row_id, score, text in zip(ids, result["_score"].to_pylist(), text_of(data, ids),
                                   strict=True):
        if "dog" in words_of(text):
            assert score < plain_score[row_id] - 1e-6
            demoted += 1
        else:
            assert score == pytest.approx(plain_score[row_id])
    assert 0 < demoted < len(ids)


def test_multi_match_searches_each_column(http: requests.Session, base_url: str,
                                          docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured({"multi_match": {"match_queries": [
        {"terms": "banana", "column": "text"},
        {"terms": "banana", "column": "title", "boost": 2.0},
    ]}}, k=ROWS))
    ids = result["id"].to_pylist()
    expected = [i for i in range(ROWS)
                if "banana" in words_of(data["text"][i].as_py())
                or "banana" in words_of(data["title"][i].as_py())]
    assert sorted(ids) == expected


def test_match_with_boost_and_prefix_length(http: requests.Session, base_url: str,
                                            docs: tuple[str, pa.Table, bool]) -> None:
    table, _, _ = docs
    plain = query(http, base_url, table, structured(
        {"match": {"terms": "mountain", "column": "text"}}, k=5))
    boosted = query(http, base_url, table, structured(
        {"match": {"terms": "mountain", "column": "text", "boost": 3.0, "prefix_length": 2,
                   "max_expansions": 10}}, k=5))
    assert plain["id"].to_pylist() == boosted["id"].to_pylist()
    np.testing.assert_allclose(boosted["_score"].to_numpy(), plain["_score"].to_numpy() * 3,
                               rtol=1e-4)


def rows_with(data: pa.Table, *words: str) -> list[int]:
    return [i for i, t in enumerate(data["text"].to_pylist()) if set(words) <= words_of(t)]


def table_version(http: requests.Session, base_url: str, table: str) -> int:
    version: int = ok(http.post(f"{base_url}/v1/table/{table}/describe", json={}))["version"]
    return version


def test_fuzzy_match(http: requests.Session, base_url: str,
                     docs: tuple[str, pa.Table, bool]) -> None:
    table, data, indexed = docs
    before = table_version(http, base_url, table)
    misspelt = {"terms": "gardn", "column": "text"}
    assert query(http, base_url, table, structured({"match": misspelt}, k=ROWS)).num_rows == 0
    result = query(http, base_url, table, structured({"match": {**misspelt, "fuzziness": 1}},
                                                     k=ROWS))
    expected = rows_with(data, "garden")
    assert sorted(result["id"].to_pylist()) == expected and expected
    assert all(s > 0 for s in result["_score"].to_pylist())
    # Two edits away is too far for fuzziness 1, near enough for 2.
    far = {"terms": "gurdn", "column": "text"}
    assert query(http, base_url, table, structured({"match": {**far, "fuzziness": 1}},
                                                   k=ROWS)).num_rows == 0
    found = query(http, base_url, table, structured({"match": {**far, "fuzziness": 2}}, k=ROWS))
    assert sorted(found["id"].to_pylist()) == expected
    # null fuzziness is automatic: 1 edit for a 5-letter word, 2 for a 7-letter one.
    auto = query(http, base_url, table, structured(
        {"match": {"terms": "gardn thundxx", "column": "text", "fuzziness": None,
                   "operator": "And"}}, k=ROWS))
    both = rows_with(data, "garden", "thunder")
    assert sorted(auto["id"].to_pylist()) == both and both
    # Or: either word, each expanded.
    either = query(http, base_url, table, structured(
        {"match": {"terms": "gardn thundxx", "column": "text", "fuzziness": 2}}, k=ROWS))
    assert sorted(either["id"].to_pylist()) == sorted(
        set(expected) | set(rows_with(data, "thunder")))
    # Searching fuzzily reads the table: no index is built, no version written.
    assert table_version(http, base_url, table) == before
    listed = ok(post(http, base_url, table, "index/list"))["indexes"]
    assert len(listed) == (2 if indexed else 0)


def test_fuzzy_match_without_column_and_with_filter(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured(
        {"match": {"terms": "candel", "fuzziness": 2}}, k=ROWS, filter="num = 1",
        prefilter=True))
    ids = result["id"].to_pylist()
    expected = [i for i in range(ROWS) if i % 5 == 1 and "candle" in
                words_of(data["text"][i].as_py()) | words_of(data["title"][i].as_py())]
    assert sorted(ids) == expected and expected


def test_fuzzy_prefix_length_changes_the_matches(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs

    def fuzzy(prefix_length: int) -> list[int]:
        result = query(http, base_url, table, structured(
            {"match": {"terms": "fog", "column": "text", "fuzziness": 1,
                       "prefix_length": prefix_length}}, k=ROWS))
        return sorted(result["id"].to_pylist())

    # "fog" is one edit from "fox" and from "dog"; only "fox" keeps its first letter.
    fox, dog = rows_with(data, "fox"), rows_with(data, "dog")
    assert fuzzy(0) == sorted(set(fox) | set(dog))
    assert fuzzy(1) == fox == fuzzy(2) and set(dog) - set(fox)
    assert fuzzy(3) == []  # the whole word must match exactly: "fog" is nowhere


def test_fuzzy_max_expansions(http: requests.Session, base_url: str,
                              docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    result = query(http, base_url, table, structured(
        {"match": {"terms": "fog", "column": "text", "fuzziness": 1, "max_expansions": 1}},
        k=ROWS))
    ids = sorted(result["id"].to_pylist())
    # One word of the two ("dog", "fox") is kept.
    assert ids in (rows_with(data, "dog"), rows_with(data, "fox"))


def test_fuzziness_above_the_bound_is_refused(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, _, indexed = docs
    before = table_version(http, base_url, table)
    # Lance's index fails at 3 edits for words of a dozen letters; an unindexed column
    # would once have looped over every length up to 10**9. Both are refused alike.
    for fuzziness in (3, 10**9):
        for body in (
            structured({"match": {"terms": "gardn", "column": "text", "fuzziness": fuzziness}}),
            structured({"multi_match": {"match_queries": [
                {"terms": "gardn", "column": "text"},
                {"terms": "gardn", "column": "title", "fuzziness": fuzziness}]}}),
        ):
            detail = assert_error(query_raw(http, base_url, table, body), 400, 13)["detail"]
            assert f"fuzziness is {fuzziness}" in detail and "0 to 2" in detail, detail
    assert table_version(http, base_url, table) == before
    assert len(ok(post(http, base_url, table, "index/list"))["indexes"]) == (2 if indexed else 0)


def test_fuzzy_match_of_a_word_too_long_for_the_index(
        http: requests.Session, base_url: str, docs: tuple[str, pa.Table, bool]) -> None:
    table, _, indexed = docs
    # 2 edits on a 60-letter word outgrow the automaton of Lance's index: a 400, not a 500.
    word = "".join(np.random.default_rng(0).choice(list("abcdefghijklmnopqrstuvwxyz"), 60))
    resp = query_raw(http, base_url, table, structured(
        {"match": {"terms": word, "column": "text", "fuzziness": 2}}))
    if indexed:
        assert "fuzziness 1 or 0" in assert_error(resp, 400, 13)["detail"]
    else:
        assert resp.status_code == 200, resp.text
    assert query(http, base_url, table, structured(
        {"match": {"terms": word, "column": "text", "fuzziness": 1}})).num_rows == 0


def test_fuzzy_without_index_keeps_the_closest_expansions(
        http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$near"
    create_table(http, base_url, table, pa.table({
        "id": pa.array(range(6)), "text": pa.array(["fox", "fog", "dog", "box", "fx", "ox"])}))

    def expand(max_expansions: int) -> list[int]:
        result = query(http, base_url, table, structured(
            {"match": {"terms": "fox", "column": "text", "fuzziness": 2,
                       "max_expansions": max_expansions}}))
        return sorted(result["id"].to_pylist())

    # "fox" itself first, then the words one edit away in alphabetical order (box, fog,
    # fx, ox), then those two away (dog).
    assert expand(1) == [0]
    assert expand(2) == [0, 3]
    assert expand(4) == [0, 1, 3, 4]
    assert expand(5) == [0, 1, 3, 4, 5]
    assert expand(50) == list(range(6))


def test_fuzzy_without_index_follows_the_table_version(
        http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$words"
    first = create_table(http, base_url, table, pa.table({
        "id": pa.array([1, 2]), "text": pa.array(["a garden", "the river"])}))
    body = structured({"match": {"terms": "zepelin", "column": "text", "fuzziness": 1}})
    assert query(http, base_url, table, body).num_rows == 0
    insert(http, base_url, table, pa.table({"id": pa.array([3]),
                                            "text": pa.array(["a Zeppelin, a zeppelin"])}))
    # The words of the new version, not those cached for the first one.
    assert query(http, base_url, table, body)["id"].to_pylist() == [3]
    assert query(http, base_url, table, {**body, "version": first["version"]}).num_rows == 0
    # Case is kept, as Lance's flat search keeps it: "Zepelin" is one edit from
    # "Zeppelin" only.
    upper = structured({"match": {"terms": "Zepelin", "column": "text", "fuzziness": 1}})
    assert query(http, base_url, table, upper)["id"].to_pylist() == [3]
    assert query(http, base_url, table, structured(
        {"match": {"terms": "Zepelin", "column": "text", "fuzziness": 1,
                   "prefix_length": 1}}))["id"].to_pylist() == [3]


def count_scans(monkeypatch: pytest.MonkeyPatch,
                before: Callable[[], None] | None = None) -> list[str]:
    """The columns whose words the in-process server reads for fuzzy matching, in order;
    ``before`` runs ahead of each read."""
    from nsframe.server._search import fts as _fts

    scans: list[str] = []
    read = _fts._distinct_words

    def counted(ds: Any, column: str) -> pa.Array:
        scans.append(column)
        if before is not None:
            before()
        return read(ds, column)

    monkeypatch.setattr(_fts, "_distinct_words", counted)
    return scans


def test_fuzzy_without_index_has_a_vocabulary_bound(
        http: requests.Session, base_url: str, ns: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nsframe.server._search import fts as _fts

    table = f"{ns}$many"
    create_table(http, base_url, table, pa.table({
        "id": pa.array(range(ROWS)), "text": pa.array(sentences(ROWS))}))
    monkeypatch.setattr(_fts, "MAX_VOCABULARY", 5)
    scans = count_scans(monkeypatch)
    body = structured({"match": {"terms": "gardn", "column": "text", "fuzziness": 1}})
    detail = assert_error(query_raw(http, base_url, table, body), 400, 13)["detail"]
    assert "FTS" in detail and "text" in detail
    # The refusal is remembered for this version: later fuzzy queries get it at once.
    again = structured({"match": {"terms": "thundr", "column": "text", "fuzziness": 2}})
    for repeat in (body, again, body):
        assert assert_error(query_raw(http, base_url, table, repeat), 400, 13)["detail"] == detail
    assert len(scans) == 1
    # Exact matching still reads the column without a vocabulary.
    exact = structured({"match": {"terms": "garden", "column": "text"}})
    assert query(http, base_url, table, exact).num_rows == 10



def test_fuzzy_without_index_reads_the_words_once_for_concurrent_queries(
        http: requests.Session, base_url: str, ns: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nsframe.server._search import fts as _fts

    table = f"{ns}$busy"
    data = pa.table({"id": pa.array(range(ROWS)), "text": pa.array(sentences(ROWS))})
    create_table(http, base_url, table, data)
    clients = 6
    arrived = threading.Semaphore(0)
    lookup = _fts.vocabulary

    def counted_lookup(ds: Any, column: str) -> Any:
        arrived.release()
        return lookup(ds, column)

    def wait_for_everyone() -> None:
        # The first read holds on until every query wants the words, so that none of
        # them can find a finished vocabulary.
        for _ in range(clients):
            assert arrived.acquire(timeout=10)

    monkeypatch.setattr(_fts, "vocabulary", counted_lookup)
    scans = count_scans(monkeypatch, before=wait_for_everyone)
    body = structured({"match": {"terms": "gardn", "column": "text", "fuzziness": 1}},
                      k=ROWS)

    def ask(_: int) -> list[int]:
        with requests.Session() as own:
            return sorted(query(own, base_url, table, body)["id"].to_pylist())

    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(ask, range(clients)))
    assert scans == ["text"]
    assert answers == [rows_with(data, "garden")] * clients and answers[0]

def test_fuzzy_without_index_reads_again_after_a_failed_read(
        http: requests.Session, base_url: str, ns: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = f"{ns}$flaky"
    create_table(http, base_url, table, pa.table({
        "id": pa.array([1, 2]), "text": pa.array(["a garden", "the river"])}))
    failures = [RuntimeError("the storage went away")]

    def fail_once() -> None:
        if failures:
            raise failures.pop()

    scans = count_scans(monkeypatch, before=fail_once)
    body = structured({"match": {"terms": "gardn", "column": "text", "fuzziness": 1}})
    assert_error(query_raw(http, base_url, table, body), 500, 18)
    # Only a refusal for too many words is remembered: this failure is not.
    assert query(http, base_url, table, body)["id"].to_pylist() == [1]
    assert query(http, base_url, table, body)["id"].to_pylist() == [1]
    assert scans == ["text", "text"]


def test_text_query_with_filter_and_prefilter(http: requests.Session, base_url: str,
                                              docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    body = {"full_text_query": {"string_query": {"query": "lazy", "columns": ["text"]}},
            "filter": "num = 2", "prefilter": True, "k": 5, "with_row_id": True}
    result = query(http, base_url, table, body)
    assert result.num_rows == 5
    assert all(i % 5 == 2 for i in result["id"].to_pylist())
    assert all("lazy" in words_of(t) for t in text_of(data, result["id"].to_pylist()))
    assert "_rowid" in result.column_names


def test_offset_pages_through_text_results(http: requests.Session, base_url: str,
                                           docs: tuple[str, pa.Table, bool]) -> None:
    table, _, _ = docs
    base = {"full_text_query": {"string_query": {"query": "apple", "columns": ["text"]}}}
    whole = query(http, base_url, table, {**base, "k": 8})
    page = query(http, base_url, table, {**base, "k": 4, "offset": 4})
    assert page["_score"].to_pylist() == whole["_score"].to_pylist()[4:]


def test_hybrid_fuses_by_reciprocal_rank(http: requests.Session, base_url: str,
                                         docs: tuple[str, pa.Table, bool]) -> None:
    table, data, _ = docs
    text_query = {"string_query": {"query": "thunder", "columns": ["text"]}}
    by_text = query(http, base_url, table, {"full_text_query": text_query, "k": 6})
    target = by_text["id"][0].as_py()
    q = data["vec"][target].as_py()
    result = query(http, base_url, table, {
        "vector": {"single_vector": q}, "full_text_query": text_query,
        "k": 6, "columns": {"column_names": ["id", "text"]},
    })
    assert result.column_names == ["id", "text", "_distance", "_score", "_relevance_score"]
    assert result.num_rows == 6
    # The row that is both the nearest vector and a text match wins.
    assert result["id"][0].as_py() == target
    assert result["_distance"][0].as_py() == 0 and result["_score"][0].as_py() > 0
    relevance = result["_relevance_score"].to_pylist()
    assert relevance == sorted(relevance, reverse=True)
    assert relevance[0] == pytest.approx(2 / 61)
    # Every row came from one list or the other.
    for distance, score in zip(result["_distance"].to_pylist(), result["_score"].to_pylist(),
                               strict=True):
        assert distance is not None or score is not None


def test_hybrid_refuses_a_batch_of_vectors(http: requests.Session, base_url: str,
                                           docs: tuple[str, pa.Table, bool]) -> None:
    table, _, _ = docs
    body = {"vector": {"multi_vector": [[0.1] * 8, [0.2] * 8]},
            "full_text_query": {"string_query": {"query": "apple"}}}
    assert "one query vector" in assert_error(query_raw(http, base_url, table, body),
                                              400, 13)["detail"]


def test_rows_appended_after_the_index_are_found(http: requests.Session, base_url: str,
                                                 ns: str) -> None:
    table = f"{ns}$late"
    make_docs(http, base_url, table)
    ok(post(http, base_url, table, "create_scalar_index", {"column": "text",
                                                             "index_type": "FTS"}))
    insert(http, base_url, table, pa.table({
        "id": pa.array([5000]), "text": pa.array(["zeppelin over the garden"]),
        "title": pa.array(["late"]), "vec": fsl(vectors(1, 8, seed=3)),
        "num": pa.array([0]),
    }))
    body = {"full_text_query": {"string_query": {"query": "zeppelin", "columns": ["text"]}}}
    assert query(http, base_url, table, body)["id"].to_pylist() == [5000]
    assert query(http, base_url, table, {**body, "fast_search": True}).num_rows == 0


@pytest.mark.parametrize(("fts", "status"), [
    ({"string_query": {"query": "a"}, "structured_query": {"query": {"match": {"terms": "a"}}}},
     400),
    ({"string_query": {"columns": ["text"]}}, 400),
    ({"string_query": {"query": "a", "columns": ["nope"]}}, 404),
    ({"string_query": {"query": "a", "columns": ["num"]}}, 400),
    ({"structured_query": {"query": {"wildcard": {"terms": "a"}}}}, 400),
    ({"structured_query": {"query": {"match": {"terms": "a"}, "phrase": {"terms": "a"}}}}, 400),
    ({"structured_query": {"query": {"match": {"column": "text"}}}}, 400),
    ({"structured_query": {"query": {"match": {"terms": "a", "operator": "xor"}}}}, 400),
    ({"structured_query": {"query": {"boolean": {"must": [], "should": [],
                                                 "must_not": [{"match": {"terms": "a"}}]}}}}, 400),
    ({"structured_query": {"query": {"boost": {"positive": {"match": {"terms": "a"}}}}}}, 400),
    ({"structured_query": {"query": {"multi_match": {"match_queries": []}}}}, 400),
    ({"structured_query": {}}, 400),
    ({"other": 1}, 400),
])
def test_bad_full_text_query(http: requests.Session, base_url: str,
                             docs: tuple[str, pa.Table, bool], fts: dict[str, Any],
                             status: int) -> None:
    table, _, _ = docs
    resp = query_raw(http, base_url, table, {"full_text_query": fts})
    assert_error(resp, status, 12 if status == 404 else 13)
