"""``where(sql, params)``: values are quoted so that data can never change the filter."""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nsframe
from nsframe import _sql


# ---------------------------------------------------------------------- rendering
@pytest.mark.parametrize(("value", "sql"), [
    pytest.param("it's", "'it''s'", id="quote"),
    pytest.param("a\\b", "'a\\b'", id="backslash"),
    pytest.param(3, "3", id="int"),
    pytest.param(-2.5, "-2.5", id="float"),
    pytest.param(True, "TRUE", id="bool"),
    pytest.param(None, "NULL", id="none"),
    pytest.param(decimal.Decimal("1.10"), "1.10", id="decimal"),
    pytest.param(np.int32(7), "7", id="numpy-int"),
    pytest.param(np.float64(0.5), "0.5", id="numpy-float"),
    pytest.param(dt.date(2020, 1, 2), "DATE '2020-01-02'", id="date"),
    pytest.param(dt.datetime(2020, 1, 2, 3, 4, 5), "TIMESTAMP '2020-01-02 03:04:05.000000'",
                 id="datetime"),
    pytest.param(dt.datetime(2020, 1, 2, 4, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=1))),
                 "arrow_cast('2020-01-02T03:04:05.000000Z', "
                 "'Timestamp(Microsecond, Some(\"UTC\"))')", id="datetime-tz"),
    pytest.param(b"\x00\xff", "X'00ff'", id="bytes"),
])
def test_literals(value: object, sql: str) -> None:
    assert _sql.bind("x = ?", [value]) == f"x = {sql}"


def test_lists_fill_in_and_empty_lists_match_nothing() -> None:
    assert _sql.bind("x IN (?)", [[1, "a", None]]) == "x IN (1, 'a', NULL)"
    assert _sql.bind("x IN (?)", [()]) == "x IN (NULL)"
    assert _sql.bind("x IN (?)", [{"b", "a"}]) == "x IN ('a', 'b')"


def test_placeholders_inside_quotes_are_text() -> None:
    assert _sql.bind("a = '?' AND `we?rd` = ? AND \"q?\" = ?", [1, "it's"]) == \
        "a = '?' AND `we?rd` = 1 AND \"q?\" = 'it''s'"
    assert _sql.bind("a = 'it''s ?' AND b = ?", [2]) == "a = 'it''s ?' AND b = 2"


@pytest.mark.parametrize(("sql", "params", "message"), [
    pytest.param("a = ? AND b = ?", [1], "more '?' than the 1 values", id="too-few"),
    pytest.param("a = ?", [1, 2], "1 '?' but 2 values", id="too-many"),
    pytest.param("a = 'open", [], "unclosed", id="unclosed-quote"),
    pytest.param("a = ?", [float("nan")], "no SQL literal", id="nan"),
    pytest.param("a = ?", [float("inf")], "no SQL literal", id="inf"),
    pytest.param("a = ?", [object()], "Cannot use a object", id="object"),
])
def test_mistakes_are_value_errors(sql: str, params: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _sql.bind(sql, params)


def test_params_must_be_a_sequence(conn: nsframe.Connection) -> None:
    query = conn.table("db$t").search()
    with pytest.raises(TypeError, match="list or tuple"):
        query.where("a = ?", "x")  # type: ignore[arg-type]
    # A bool second argument is LanceDB's where(sql, prefilter).
    assert query.where("a = 1", False).prefilter is False
    with pytest.raises(TypeError, match="prefilter twice"):
        query.where("a = 1", True, prefilter=False)
    assert query.where("a = ?", ("it's",), prefilter=True).request_body()["filter"] == \
        "a = 'it''s'"


# ---------------------------------------------------------------------- against Lance
@pytest.fixture
def shop(conn: nsframe.Connection, ns: str) -> nsframe.Table:
    utc = dt.timezone.utc
    return conn.create_table(f"{ns}$shop", pa.table({
        "id": pa.array(range(6), pa.int64()),
        "cat": ["it's", "it''s", "x' OR '1'='1", "plain", None, "it's"],
        "price": [1.0, 2.5, 3.0, 4.0, 5.0, 6.0],
        "ok": [True, False, True, None, False, True],
        "day": [dt.date(2020, 1, d) for d in range(1, 7)],
        "at": pa.array([dt.datetime(2020, 1, 1, 0, 0, s) for s in range(6)], pa.timestamp("us")),
        "at_tz": pa.array([dt.datetime(2020, 1, 1, 0, 0, s, tzinfo=utc) for s in range(6)],
                          pa.timestamp("us", tz="Europe/Paris")),
    }))


@pytest.mark.parametrize(("sql", "params", "expected"), [
    pytest.param("cat = ? AND price < ?", ["it's", 3], [0], id="issue-example"),
    pytest.param("cat = ?", ["it''s"], [1], id="doubled-quote"),
    pytest.param("cat = ?", ["x' OR '1'='1"], [2], id="injection-is-data"),
    pytest.param("cat = ?", ["nope' OR '1'='1"], [], id="injection-matches-nothing"),
    pytest.param("cat IS ?", [None], [4], id="null"),
    pytest.param("ok = ?", [False], [1, 4], id="bool"),
    pytest.param("id IN (?)", [[1, 3, 99]], [1, 3], id="in-list"),
    pytest.param("cat IN (?)", [["plain", "it's"]], [0, 3, 5], id="in-strings"),
    pytest.param("id IN (?)", [[]], [], id="in-empty"),
    pytest.param("day >= ?", [dt.date(2020, 1, 5)], [4, 5], id="date"),
    pytest.param("at = ?", [dt.datetime(2020, 1, 1, 0, 0, 2)], [2], id="datetime"),
    pytest.param("at_tz = ?",
                 [dt.datetime(2020, 1, 1, 1, 0, 3, tzinfo=dt.timezone(dt.timedelta(hours=1)))],
                 [3], id="datetime-tz"),
    pytest.param("price > ? AND price <= ?", [decimal.Decimal("2.5"), np.float32(5)],
                 [2, 3, 4], id="decimal-and-numpy"),
])
def test_filters_with_params_match_exactly(shop: nsframe.Table, sql: str,
                                           params: list[object], expected: list[int]) -> None:
    got = shop.search().where(sql, params).to_arrow().column("id").to_pylist()
    assert sorted(got) == expected


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.text(max_size=12), min_size=1, max_size=6),
       pick=st.integers(min_value=0, max_value=5))
def test_any_string_matches_exactly_the_equal_rows(conn: nsframe.Connection, ns: str,
                                                   values: list[str], pick: int) -> None:
    target = values[pick % len(values)]
    tbl = conn.create_table(f"{ns}$s{uuid.uuid4().hex[:8]}",
                            {"id": list(range(len(values))), "s": values})
    got = tbl.search().where("s = ? AND id >= ?", [target, 0]).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [i for i, v in enumerate(values) if v == target]
    assert tbl.count_rows() == len(values)  # and nothing else happened to the table
