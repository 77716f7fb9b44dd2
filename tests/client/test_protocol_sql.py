"""The one SQL tokenizer: quotes, comments, placeholders and parentheses, as both sides
read them (`bind` on the client, `closes_unopened` in the server)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nsframe._protocol.sql import Kind, Token, closes_unopened, tokenize
from nsframe._sql import bind


def kinds(sql: str) -> list[tuple[Kind, str]]:
    return [(t.kind, t.text) for t in tokenize(sql)]


@given(st.text(alphabet=st.sampled_from("ab ?()'\"`-/*\n")))
def test_tokens_join_back_to_the_input(sql: str) -> None:
    assert "".join(t.text for t in tokenize(sql)) == sql


@pytest.mark.parametrize(("sql", "expected"), [
    pytest.param("a = ?", [(Kind.TEXT, "a = "), (Kind.PLACEHOLDER, "?")], id="placeholder"),
    pytest.param("'it''s ?'", [(Kind.STRING, "'it''s ?'")], id="doubled-quote"),
    pytest.param("''", [(Kind.STRING, "''")], id="empty-string"),
    pytest.param("''''", [(Kind.STRING, "''''")], id="just-a-quote"),
    pytest.param('"we?rd"', [(Kind.QUOTED_NAME, '"we?rd"')], id="double-quoted-name"),
    pytest.param("`a``b`", [(Kind.QUOTED_NAME, "`a``b`")], id="backtick-doubled"),
    pytest.param("'--' -- ?\n?", [(Kind.STRING, "'--'"), (Kind.TEXT, " "),
                                 (Kind.LINE_COMMENT, "-- ?"), (Kind.TEXT, "\n"),
                                 (Kind.PLACEHOLDER, "?")], id="line-comment-ends-at-newline"),
    pytest.param("/* ' ? */?", [(Kind.BLOCK_COMMENT, "/* ' ? */"), (Kind.PLACEHOLDER, "?")],
                 id="quote-inside-block-comment"),
    pytest.param("/* /* */ x", [(Kind.BLOCK_COMMENT, "/* /* */"), (Kind.TEXT, " x")],
                 id="block-comments-do-not-nest"),
    pytest.param("'/*' ?", [(Kind.STRING, "'/*'"), (Kind.TEXT, " "), (Kind.PLACEHOLDER, "?")],
                 id="comment-opener-inside-string"),
    pytest.param("a - -b / *c", [(Kind.TEXT, "a - -b / *c")], id="operators-are-text"),
    pytest.param("(?)", [(Kind.OPEN, "("), (Kind.PLACEHOLDER, "?"), (Kind.CLOSE, ")")],
                 id="parentheses"),
    pytest.param("", [], id="empty"),
])
def test_tokens(sql: str, expected: list[tuple[Kind, str]]) -> None:
    assert kinds(sql) == expected


@pytest.mark.parametrize("sql", ["'open ?", '"open', "`open", "/* open ?", "a = 'it''s"])
def test_an_unterminated_run_reaches_the_end_unclosed(sql: str) -> None:
    last = list(tokenize(sql))[-1]
    assert last.closed is False
    assert sql.endswith(last.text)


def test_line_comment_without_newline_runs_to_the_end() -> None:
    assert list(tokenize("a -- ?")) == [Token(Kind.TEXT, "a "), Token(Kind.LINE_COMMENT, "-- ?")]


@pytest.mark.parametrize(("sql", "expected"), [
    ("id = 1", False),
    ("(id = 1)", False),
    ("id = 1) OR (true", True),
    ("(a) OR b)", True),
    ("name = ')'", False),
    ("`odd)` = 1", False),
    ('"odd)" = 1', False),
    ("a = 1 -- )\n", False),
    ("a = 1 /* ) */", False),
    ("a = 1 /* ) unclosed", False),
    ("a = 'x''' ) ", True),
    ("a = 'unclosed )", False),
    ("((a)", False),
])
def test_closes_unopened(sql: str, expected: bool) -> None:
    assert closes_unopened(sql) is expected


def test_bind_skips_placeholders_in_comments() -> None:
    assert bind("a = ? -- why? because\nAND b = ?", [1, 2]) == \
        "a = 1 -- why? because\nAND b = 2"
    assert bind("/* it's ? */ a = ?", ["x"]) == "/* it's ? */ a = 'x'"


@pytest.mark.parametrize(("sql", "opener"), [("a = ? /* note", "/* comment"),
                                             ('"col = ?', '" quote')])
def test_bind_refuses_an_unclosed_run(sql: str, opener: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"unclosed {opener}")):
        bind(sql, [1])
