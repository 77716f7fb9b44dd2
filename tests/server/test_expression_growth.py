"""No expression can make values grow past what the server allows (docs/server.md,
"Expression limits", `nsframe.server._http.growth`).

Before: ``cardinality(array_repeat(id, 100000000)) > 0``, a 50-byte count_rows
predicate any reader may send, asked Lance for 160 GB and ended the worker with SIGABRT;
``lpad(s, 100000000)`` and five nested ``replace`` or ``regexp_replace`` calls panicked
inside Lance (a 500 after seconds of work). The servers here are real ``nsframe serve``
processes, so a request that kills one fails its test rather than pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from nsframe.server._http.growth import _NAMES, _STEMS, GrowthError, growth
from nsframe.server._limits import Limits
from tests.storage._servers import ServerProcess, serving_table
from tests.support import assert_error

ROWS = 10
TABLE = "g%24t"


def nested(call: str, times: int) -> str:
    """``call`` (a format with one ``{}`` for its input) applied ``times`` times to s."""
    expr = "s"
    for _ in range(times):
        expr = call.format(expr)
    return expr


TWENTY = "'" + "x" * 20 + "'"
# Each crashed the worker (SIGABRT) or panicked inside Lance (a 500) before.
CRASHERS = {
    "array_repeat": "cardinality(array_repeat(id, 100000000)) > 0",
    "lpad": "length(lpad(s, 100000000)) > 0",
    "replace": "length(" + nested("replace({}, '', " + TWENTY + ")", 5) + ") > 0",
    "regexp_replace": "length("
                      + nested("regexp_replace({}, '', " + TWENTY + ", 'g')", 5) + ") > 0",
    "repeat": "length(repeat(s, 1000000000)) > 0",
}
# Ordinary uses, and the rows they match out of ids 0-9 with s = 's<id>', tags ['a', 'b'].
ORDINARY = {
    "lpad(s, 4, '0') = '00s1'": 1,
    "replace(s, 's', '') = '7'": 1,
    "replace(replace(s, 's', ''), '1', '') = ''": 1,
    "repeat(s, 2) = 's3s3'": 1,
    "array_has(range(100), id)": ROWS,  # the default admits range(100)
    "array_has(generate_series(2, 3), id)": 2,
    "cardinality(array_repeat(id, 3)) = 3": ROWS,
    "regexp_replace(s, 's', 'x') = 'x5'": 1,
    "array_to_string(tags, '-') = 'a-b'": ROWS,
    "encode(s, 'hex') = '7331'": 1,
    "s = 'repeat(s, 1000000000)'": 0,  # quoted text is not a call
    "rpad(s, 3, '-') = 's4-' -- repeat(s, 1000000000)": 1,  # nor is a comment
}


def rows(n: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"s{i}" for i in range(n)],
                     "tags": [["a", "b"]] * n})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with serving_table(tmp_path_factory.mktemp("growth"), "g$t", rows()) as one:
        yield one


def count(server: ServerProcess, predicate: str) -> requests.Response:
    return requests.post(f"{server.url}/v1/table/{TABLE}/count_rows",
                         json={"predicate": predicate}, timeout=120)


@pytest.mark.parametrize("predicate", CRASHERS.values(), ids=CRASHERS.keys())
def test_a_growing_expression_is_refused_before_it_runs(
        server: ServerProcess, predicate: str) -> None:
    assert server.proc is not None
    workers_before = server.log_tail(1_000_000).count("Started server process")
    detail = assert_error(count(server, predicate), 400, 13)["detail"]
    assert "max_expression_growth" in detail and f"at most {Limits().max_expression_growth}" \
        in detail and "times larger" in detail
    assert count(server, "id >= 0").json() == ROWS  # the same worker answers on
    assert server.log_tail(1_000_000).count("Started server process") == workers_before
    assert "ERROR" not in server.log_tail(200)


@pytest.mark.parametrize(("predicate", "matching"), ORDINARY.items(), ids=ORDINARY.keys())
def test_ordinary_uses_of_growing_functions_still_run(
        server: ServerProcess, predicate: str, matching: int) -> None:
    answer = count(server, predicate)
    assert answer.status_code == 200, answer.text
    assert answer.json() == matching


@pytest.mark.parametrize(("predicate", "says"), [
    ("repeat(s, id) = ''", "repeat() takes an integer literal as its argument 2"),
    ("lpad(s, 2 + 2) = ''", "lpad() takes an integer literal as its argument 2"),
    ("replace(s, 's', s) = ''", "replace() takes a string literal as its replacement"),
    ("array_has(range(id), 1)", "range() takes integer literals"),
])
def test_a_size_that_is_not_a_literal_is_refused(
        server: ServerProcess, predicate: str, says: str) -> None:
    detail = assert_error(count(server, predicate), 400, 13)["detail"]
    assert says in detail and "max_expression_growth" in detail


def test_every_member_that_is_sql_is_counted(server: ServerProcess) -> None:
    # Not only predicates: an update's value runs per row too, and changes nothing here.
    answer = requests.post(f"{server.url}/v1/table/{TABLE}/update",
                           json={"updates": [["s", "repeat(s, 1000000)"]]}, timeout=120)
    detail = assert_error(answer, 400, 13)["detail"]
    assert "expression at updates[0][1]" in detail and "max_expression_growth" in detail
    assert count(server, "s = 's1'").json() == 1


def test_the_limit_is_a_setting(tmp_path: Path) -> None:
    with serving_table(tmp_path, "g$t", rows(1),
                       extra_args=["--max-expression-growth", "1000"]) as one:
        allowed = count(one, "length(lpad(s, 500)) = 500")
        assert allowed.status_code == 200 and allowed.json() == 1
        detail = assert_error(count(one, "lpad(s, 1001) = ''"), 400, 13)["detail"]
        assert "at most 1000 (max_expression_growth)" in detail


# ------------------------------------------------------------------ the count itself
@pytest.mark.parametrize(("sql", "factor"), [
    ("id = 1", 1),
    ("repeat(s, 3)", 3),
    ("REPEAT ( s , 4 )", 4),  # any case, any spacing
    ('"repeat"(s, 7)', 7),  # a quoted name calls the function too
    ("array_repeat([1, 2], 3)", 3),  # the list's comma is not an argument's
    ("repeat(repeat(s, 3), 5)", 15),  # nested calls multiply
    ("repeat(s, 3) || repeat(s, 5)", 15),  # side by side: counted as if nested
    ("lpad(s, -5)", 1),
    ("range(1, 10, 2)", 5),
    ("range(10, 1)", 1),
    ("generate_series(1, 3)", 3),  # its stop included
    ("replace(s, 'a', '')", 1),  # shrinks
    ("replace(s, 'ab', 'xyz')", 2),  # 3 bytes for every 2
    ("replace(s, '', 'xx')", 3),  # between every two characters
    ("regexp_replace(s, '(.)', '\\1\\1', 'g')", 9),  # each reference copies a match
    ("array_to_string(tags, ', ')", 5),
    ("encode(encode(s, 'hex'), 'hex')", 4),
    ("repeat(s, /* many */ 3 -- still three\n)", 3),
    ("repeat /* a call all the same */ (s, 3)", 3),
    ("repeat -- on the next line\n (s, 3)", 3),
    ("s = 'repeat(s, 1000000)'", 1),
])
def test_growth_factors(sql: str, factor: int) -> None:
    assert growth(sql)[0] == factor


def test_a_refusal_names_a_few_calls() -> None:
    product, grown = growth(" || ".join(["repeat(s, 2)"] * 9))
    assert product == 512 and grown == ["repeat x2"] * 5 + ["..."]


@pytest.mark.parametrize("sql", ["repeat(s, (3))", "repeat(s, '3')", "repeat(s)",
                                 "range(ts, ts2, INTERVAL 1 DAY)", "array_to_string(t, s)"])
def test_sizes_must_be_literals(sql: str) -> None:
    with pytest.raises(GrowthError):
        growth(sql)


def test_the_quick_test_finds_every_name() -> None:
    assert all(any(stem in name for stem in _STEMS) for name in _NAMES)
