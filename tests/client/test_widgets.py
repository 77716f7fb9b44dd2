"""The browser widget, driven headless the way a person would: pick values, press buttons.

Every test talks to the real server; assertions read the widget's state and, after an
action, the server's data through the client.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape

import pyarrow as pa
import pytest

import nsframe
from nsframe import Connection, Table
from nsframe.exceptions import AlreadyExistsError, InvalidInputError, TableNotFoundError
from nsframe.widgets import Browser, browse

DIM = 4
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()),
                    ("vector", pa.list_(pa.float32(), DIM))])


def _rows(ids: list[int]) -> pa.Table:
    names = {1: "alpha", 2: "beta", 3: "gamma", 4: "delta", 5: "epsilon"}
    return pa.table({"id": ids, "name": [names.get(i, f"n{i}") for i in ids],
                     "vector": [[float(i), float(i) / 2, 0.0, 1.0] for i in ids]}, schema=SCHEMA)


def _text(html: str) -> str:
    """What a person reads in an HTML widget."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip())


def _ids(table: Table) -> list[int]:
    return sorted(table.to_arrow(columns=["id"]).column("id").to_pylist())


@pytest.fixture
def conn(base_url: str) -> Iterator[Connection]:
    with nsframe.connect(base_url) as connection:
        yield connection


@pytest.fixture
def items(conn: Connection, ns: str) -> Table:
    """Version 1: ids 1-3 (tagged "first"); version 2: + ids 4, 5; version 3: id 1 deleted."""
    table = conn.create_table(f"{ns}$items", _rows([1, 2, 3]))
    table.insert(_rows([4, 5]))
    table.delete("id = 1")
    table.create_tag("first", 1)
    return table


def _open(conn: Connection, table: Table) -> Browser:
    w = browse(conn)
    w.namespace_picker.value = table.namespace[0]
    w.table_picker.value = table.name
    assert w.messages.last_error is None, w.messages.value
    return w


# ---------------------------------------------------------------------- navigation
def test_picking_namespace_and_table_selects_the_latest_version(
        conn: Connection, ns: str, items: Table) -> None:
    conn.create_table(f"{ns}$other", _rows([9]))
    w = browse(conn)
    assert ns in [value for _, value in w.namespace_picker.options]
    assert (w.selected_table, w.selected) == (None, None)  # (not narrowed: a click changes it)

    w.namespace_picker.value = ns
    assert list(w.table_picker.options) == ["items", "other"]
    w.table_picker.value = "items"

    assert (w.selected_table, w.selected_branch, w.selected_version) == (items.id, "main", 3)
    assert w.selected is not None and w.selected.ref.read_only
    assert _ids(w.selected) == [2, 3, 4, 5]
    assert "branch main · version 3: rows 1-4 of 4 rows" in _text(w.preview.rows.value)
    assert f"root / {ns} / items / branch main / version 3" in _text(w.breadcrumb.value)
    assert "vector" in _text(w.preview.schema.value)
    assert "fixed_size_list<item: float>[4]" in _text(w.preview.schema.value)

    w.table_picker.value = "other"
    assert w.selected_table == f"{ns}$other"
    assert "of 1 rows" in _text(w.preview.rows.value)


def test_nested_namespaces_are_listed(conn: Connection, ns: str) -> None:
    conn.create_namespace(f"{ns}$inner")
    conn.create_table(f"{ns}$inner$deep", _rows([1]))
    w = browse(conn)
    assert (ns, ns) in w.namespace_picker.options
    assert f"{ns}$inner" not in [value for _, value in w.namespace_picker.options]
    # Stepping into a namespace lists its children under the path that leads there.
    w.namespace_picker.value = ns
    assert w.namespace_picker.options[:2] == (("(root)", ""), (ns, ns))
    assert (f"{ns} / inner", f"{ns}$inner") in w.namespace_picker.options
    w.namespace_picker.value = f"{ns}$inner"
    assert [value for _, value in w.namespace_picker.options] == ["", ns, f"{ns}$inner"]
    w.table_picker.value = "deep"
    assert w.selected_table == f"{ns}$inner$deep"
    assert _ids(w.selected) == [1]  # type: ignore[arg-type]
    # ...and the path leads back up.
    w.namespace_picker.value = ""
    assert (ns, ns) in w.namespace_picker.options and w.table_picker.value is None


def test_timeline_shows_versions_newest_first_with_changes_and_tags(
        conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    labels = [label for label, _ in w.version_list.options]
    assert [value for _, value in w.version_list.options] == [3, 2, 1]
    assert re.match(r"v3 · \d{4}-\d\d-\d\d \d\d:\d\d · Delete where \(?id = 1\)?$",
                    labels[0]), labels[0]
    assert labels[1].endswith("· Append")
    # Tags come before the change, so a narrow list never cuts them off.
    assert re.match(r"v1 · [\d :-]+ · \[first\] · ", labels[2]), labels[2]
    assert [label for label, _ in w.tag_list.options] == ["first → main v1"]


def test_clicking_a_version_changes_the_preview_and_the_selection(
        conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    seen: list[int | None] = []
    w.observe(lambda change: seen.append(change["new"]), names="selected_version")

    w.version_list.value = 1

    assert seen == [1]
    assert w.selected_version == 1 and w.selected_tag is None
    assert _ids(w.selected) == [1, 2, 3]  # type: ignore[arg-type]
    preview = _text(w.preview.rows.value)
    assert "version 1: rows 1-3 of 3 rows" in preview
    assert "alpha" in preview and "delta" not in preview


def test_picking_a_tag_selects_its_version(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.tag_list.value = "first"
    assert (w.selected_version, w.selected_tag, w.version_list.value) == (1, "first", 1)
    assert "tag first" in _text(w.breadcrumb.value)
    assert "alpha" in _text(w.preview.rows.value)

    w.version_list.value = 2  # moving off the tagged version drops the tag
    assert (w.selected_version, w.selected_tag, w.tag_list.value) == (2, None, None)


def test_branch_picker_shows_the_branch_timeline(conn: Connection, items: Table) -> None:
    dev = items.create_branch("dev", from_version=2)
    dev.insert(_rows([6]))
    w = _open(conn, items)
    assert list(w.branch_picker.options) == ["main", "dev"]

    w.branch_picker.value = "dev"

    assert w.selected_branch == "dev"
    assert w.selected_version == dev.version
    assert _ids(w.selected) == [1, 2, 3, 4, 5, 6]  # type: ignore[arg-type]
    assert f"branch dev · version {dev.version}" in _text(w.preview.rows.value)
    assert len(w.version_list.options) == len(dev.versions())


def test_browsing_one_table_without_a_connection(items: Table) -> None:
    w = browse(items.at(2))
    assert w.namespace_picker.disabled and w.table_picker.disabled
    assert (w.selected_table, w.selected_version) == (items.id, 2)
    assert "of 5 rows" in _text(w.preview.rows.value)
    w.version_list.value = 3
    assert _ids(w.selected) == [2, 3, 4, 5]  # type: ignore[arg-type]


# ---------------------------------------------------------------------- preview
def test_preview_pages_and_column_choice(conn: Connection, ns: str) -> None:
    table = conn.create_table(f"{ns}$many", _rows(list(range(1, 26))))
    w = _open(conn, table)
    assert "rows 1-10 of 25 rows" in _text(w.preview.rows.value)
    assert w.preview.previous_button.disabled and not w.preview.next_button.disabled

    w.preview.next_button.click()
    w.preview.next_button.click()
    assert "rows 21-25 of 25 rows" in _text(w.preview.rows.value)
    assert w.preview.next_button.disabled
    w.preview.next_button.click()  # nothing past the last page
    assert "rows 21-25 of 25 rows" in _text(w.preview.rows.value)

    w.preview.page_size.value = 25
    assert "rows 1-25 of 25 rows" in _text(w.preview.rows.value)

    w.preview.columns.value = ("id",)
    html = w.preview.rows.value
    assert ">id<" in html and ">name<" not in html and ">vector<" not in html


# ---------------------------------------------------------------------- search
def test_search_by_the_vector_of_a_row(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    assert list(w.search.vector_column.options) == ["vector"]
    w.search.mode.value = "vector of row #"
    w.search.row.value = 2  # the third row shown: id 4
    w.search.limit.value = 2
    w.search.search_button.click()

    assert w.messages.last_error is None, w.messages.value
    preview = _text(w.preview.rows.value)
    assert preview.startswith("search: 2 nearest to row #2 by vector")
    assert "_distance" in w.preview.rows.value
    first = re.search(r"_distance 0 (\d+) ", preview)
    assert first is not None and first.group(1) == "4", preview

    w.search.clear_button.click()
    assert "of 4 rows" in _text(w.preview.rows.value)


def test_search_with_a_filter_only(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.search.filter.value = "id >= 4"
    w.search.search_button.click()
    preview = _text(w.preview.rows.value)
    assert preview.startswith("search: 2 rows where id >= 4")
    assert "delta" in preview and "epsilon" in preview and "beta" not in preview


def test_a_failed_search_does_not_leave_the_last_results_up(conn: Connection,
                                                             items: Table) -> None:
    w = _open(conn, items)
    w.search.filter.value = "id >= 4"
    w.search.search_button.click()
    assert _text(w.preview.rows.value).startswith("search: 2 rows where id >= 4")
    w.search.filter.value = "nmae = 'x'"
    w.search.search_button.click()
    assert "Did you mean 'name'?" in str(w.messages.last_error)
    preview = _text(w.preview.rows.value)
    assert not preview.startswith("search:") and "of 4 rows" in preview


def test_text_search_uses_the_fts_index(conn: Connection, items: Table) -> None:
    items.create_fts_index("name")
    w = _open(conn, items)
    w.search.text.value = "gamma"
    w.search.search_button.click()
    assert w.messages.last_error is None, w.messages.value
    preview = _text(w.preview.rows.value)
    assert "search: 1 matching 'gamma'" in preview and "gamma" in preview


def test_a_filtered_search_filters_first_unless_told_otherwise(
        conn: Connection, items: Table) -> None:
    items.create_fts_index("name")
    w = _open(conn, items)
    w.search.mode.value = "vector of row #"
    w.search.row.value = 0  # the first row shown (id 2): its nearest is itself
    w.search.filter.value = "id >= 4"
    w.search.limit.value = 1
    w.search.search_button.click()
    assert w.messages.last_error is None, w.messages.value
    # Filtered first: the nearest row with id >= 4, where filtering the one nearest (id
    # 2 itself) afterwards would leave nothing.
    assert "search: 1 nearest to row #0" in _text(w.preview.rows.value)
    w.search.filter_order.value = "search, then filter"
    w.search.search_button.click()
    assert "search: 0 nearest" in _text(w.preview.rows.value)
    assert "(filtered after the search)" in _text(w.preview.rows.value)


def test_search_shows_only_the_fields_of_its_mode(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    assert w.search.by_text.layout.display != "none"
    assert w.search.by_vector.layout.display == "none"
    w.search.mode.value = "vector of row #"
    assert w.search.by_text.layout.display == "none"
    assert w.search.by_vector.layout.display != "none"
    # Descriptions as wide as their words: nothing cut to "vector col...".
    assert w.search.vector_column.style.description_width == "initial"


def test_columns_are_checkboxes_that_follow_the_value(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    boxes = {b.description: b for b in w.preview.columns.children[1:]}
    assert list(boxes) == ["id", "name", "vector"] and all(b.value for b in boxes.values())
    boxes["vector"].value = False
    assert w.preview.columns.value == ("id", "name")
    assert ">vector<" not in w.preview.rows.value
    w.preview.columns.value = ("id",)
    assert not boxes["name"].value


# ---------------------------------------------------------------------- actions
def test_tag_action_asks_then_creates_the_tag(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.version_list.value = 2
    w.actions.tag_name.value = "golden"
    w.actions.tag_button.click()

    assert w.actions.pending
    assert "Create tag 'golden' on version 2 of branch main?" in _text(w.actions.question.value)
    assert "golden" not in conn.table(items.id).tags()  # nothing before the confirmation

    w.actions.confirm_button.click()

    assert not w.actions.pending
    assert conn.table(items.id).tags()["golden"].version == 2
    assert "golden → main v2" in [label for label, _ in w.tag_list.options]
    assert "[golden]" in dict((v, k) for k, v in w.version_list.options)[2]
    assert "Tag 'golden' now names version 2" in _text(w.messages.value)


def test_cancel_leaves_the_table_as_it_was(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.version_list.value = 1
    w.actions.restore_button.click()
    w.actions.cancel_button.click()
    assert not w.actions.pending
    assert [v.version for v in conn.table(items.id).versions()] == [1, 2, 3]
    assert "nothing was changed" in _text(w.messages.value)


def test_restore_action_makes_a_new_version_with_the_old_rows(
        conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.version_list.value = 1
    w.actions.restore_button.click()
    w.actions.confirm_button.click()

    table = conn.table(items.id)
    assert table.version == 4
    assert _ids(table) == [1, 2, 3]
    assert w.selected_version == 4 and w.version_list.value == 4
    assert "Restored version 1 of main as new version 4" in _text(w.messages.value)
    assert "version 4: rows 1-3 of 3 rows" in _text(w.preview.rows.value)
    assert [v for _, v in w.version_list.options] == [4, 3, 2, 1]


def test_branch_action_forks_from_the_selected_version(
        conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.version_list.value = 2
    w.actions.branch_name.value = "experiment"
    w.actions.branch_button.click()
    w.actions.confirm_button.click()

    branch = conn.table(items.id).branches()["experiment"]
    assert branch.parent_version == 2
    assert _ids(conn.table(items.id).branch("experiment")) == [1, 2, 3, 4, 5]
    assert w.selected_branch == "experiment" and w.branch_picker.value == "experiment"
    assert "experiment" in w.branch_picker.options
    assert "Branch 'experiment' was created from version 2 of main" in _text(w.messages.value)
    assert _ids(w.selected) == [1, 2, 3, 4, 5]  # type: ignore[arg-type]


# ---------------------------------------------------------------------- errors
def _assert_error_shown(w: Browser, kind: type[BaseException], *words: str) -> None:
    assert isinstance(w.messages.last_error, kind), w.messages.value
    assert "nsframe-error" in w.messages.value
    shown = _text(w.messages.value)
    assert "Traceback" not in shown
    for word in words:
        assert word in shown, shown


def test_a_tag_name_that_exists_shows_the_server_error(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.actions.tag_name.value = "first"
    w.actions.tag_button.click()
    w.actions.confirm_button.click()  # no exception escapes the click
    _assert_error_shown(w, AlreadyExistsError, "first", "409")
    assert conn.table(items.id).tags()["first"].version == 1  # unchanged


def test_a_bad_filter_shows_the_server_detail(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.search.filter.value = "id >>> 2"
    w.search.search_button.click()
    _assert_error_shown(w, InvalidInputError, "400")
    assert "of 4 rows" in _text(w.preview.rows.value)  # the preview stays as it was


def test_an_action_without_a_name_says_what_to_type(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    w.actions.branch_button.click()
    _assert_error_shown(w, ValueError, "Type a name for the new branch first.")
    assert not w.actions.pending
    assert list(conn.table(items.id).branches()) == []


def test_a_missing_table_shows_a_message_not_a_traceback(conn: Connection, ns: str) -> None:
    w = browse(conn.table(f"{ns}$nothing"))
    _assert_error_shown(w, TableNotFoundError, "404")
    assert w.selected is None


def test_browse_rejects_what_it_cannot_show() -> None:
    with pytest.raises(TypeError, match="Connection or a Table"):
        browse("db$items")  # type: ignore[arg-type]


def test_refresh_shows_what_others_wrote(conn: Connection, items: Table) -> None:
    w = _open(conn, items)
    conn.table(items.id).insert(_rows([7]))  # another person writes meanwhile
    assert [v for _, v in w.version_list.options] == [3, 2, 1]
    w.refresh_button.click()
    assert [v for _, v in w.version_list.options] == [4, 3, 2, 1]
    assert w.selected_version == 3  # the selection stays where it was
    w.version_list.value = 4
    assert "epsilon" in _text(w.preview.rows.value) and "n7" in _text(w.preview.rows.value)


def test_refresh_steps_out_of_a_namespace_that_was_dropped(conn: Connection, ns: str) -> None:
    conn.create_namespace(f"{ns}$inner")
    conn.create_table(f"{ns}$inner$deep", _rows([1]))
    w = browse(conn)
    w.namespace_picker.value = ns
    w.namespace_picker.value = f"{ns}$inner"
    conn.drop_namespace(f"{ns}$inner", behavior="cascade")  # someone else drops it
    w.refresh_button.click()
    assert w.namespace_picker.value == ns
    assert f"{ns}$inner" not in [value for _, value in w.namespace_picker.options]
    assert w.selected_table is None and w.messages.last_error is None
    assert "no longer exists" in _text(w.messages.value)


def test_a_declared_table_says_it_has_no_data_yet(conn: Connection, ns: str,
                                                  items: Table) -> None:
    conn.create_table(f"{ns}$later")  # declared only: no version yet
    w = _open(conn, items)
    w.table_picker.value = "later"
    _assert_error_shown(w, TableNotFoundError, "only declared")
    # Nothing of the table shown before stays on screen.
    assert w.selected_table is None and w.selected is None
    assert w.version_list.options == () and "alpha" not in _text(w.preview.rows.value)
    w.table_picker.value = "items"  # and the browser goes on working
    assert w.selected_version == 3 and w.messages.last_error is None


def test_importing_the_widgets_module_does_not_load_ipywidgets() -> None:
    code = ("import sys, nsframe.widgets; "
            "assert 'ipywidgets' not in sys.modules, 'ipywidgets loaded too early'; "
            "nsframe.widgets.Browser; assert 'ipywidgets' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ---------------------------------------------------------------------- search by meaning
NOTES = ["the red apple pie is sweet", "a blue sky over the sea", "grey clouds at night",
         "green apple orchard in spring", "stock prices fell today"]


@pytest.fixture
def notes(conn: Connection, ns: str) -> Table:
    """Texts with the deterministic `nsframe-hashing` function attached (no model)."""
    from nsframe.embeddings import get_registry

    func = get_registry().get("nsframe-hashing").create(dim=32)
    table = conn.create_table(f"{ns}$notes", {"id": list(range(1, 6)), "text": NOTES},
                              embedding=func)
    table.create_fts_index("text")
    return table


def test_a_table_with_a_function_is_searched_by_meaning_first(
        conn: Connection, notes: Table) -> None:
    w = _open(conn, notes)
    assert list(w.search.mode.options) == ["meaning", "full text", "vector of row #"]
    assert w.search.mode.value == "meaning"
    assert w.search.function.layout.display != "none"
    assert [label for label, _ in w.search.function.options] == [
        "nsframe-hashing dim=32 on text → vector"]
    assert "by meaning" in w.search.text.placeholder

    w.search.text.value = "apple pie"
    w.search.limit.value = 2
    w.search.search_button.click()

    assert w.messages.last_error is None, w.messages.value
    preview = _text(w.preview.rows.value)
    assert preview.startswith("search: 2 nearest in meaning to 'apple pie' "
                              "(nsframe-hashing dim=32 on text)"), preview
    # The function the table names embedded the question: the same rows as the client's.
    expected = notes.search("apple pie").limit(2).to_arrow().column("id").to_pylist()
    assert w.preview.results is not None
    assert w.preview.results.column("id").to_pylist() == expected
    assert expected[0] == 1 and "_distance" in w.preview.rows.value


def test_full_text_stays_reachable_beside_meaning(conn: Connection, notes: Table) -> None:
    w = _open(conn, notes)
    w.search.text.value = "apple"
    w.search.mode.value = "full text"
    assert w.search.function.layout.display == "none"
    assert w.search.text.placeholder.startswith("words to find")
    w.search.search_button.click()
    assert w.messages.last_error is None, w.messages.value
    assert _text(w.preview.rows.value).startswith("search: 2 matching 'apple'")
    assert "_score" in w.preview.rows.value
    assert sorted(w.preview.results.column("id").to_pylist()) == [1, 4]  # type: ignore[union-attr]


def test_search_by_meaning_with_a_filter(conn: Connection, notes: Table) -> None:
    w = _open(conn, notes)
    w.search.text.value = "apple"
    w.search.filter.value = "id > 1"
    w.search.limit.value = 1
    w.search.search_button.click()
    assert w.messages.last_error is None, w.messages.value
    assert _text(w.preview.rows.value).startswith(
        "search: 1 nearest in meaning to 'apple' (nsframe-hashing dim=32 on text) where id > 1")
    assert w.preview.results.column("id").to_pylist() == [4]  # type: ignore[union-attr]


def test_meaning_mode_comes_and_goes_with_the_function(
        conn: Connection, notes: Table, items: Table) -> None:
    w = browse(conn)
    w.namespace_picker.value = notes.namespace[0]
    w.table_picker.value = "items"  # no function: full text first, no meaning mode
    assert list(w.search.mode.options) == ["full text", "vector of row #"]
    assert w.search.mode.value == "full text"
    w.table_picker.value = "notes"
    assert w.search.mode.value == "meaning"
    w.table_picker.value = "items"
    assert w.search.mode.value == "full text"
    assert w.search.function.layout.display == "none"


def test_a_function_this_client_lacks_is_named_in_the_error(
        conn: Connection, ns: str) -> None:
    import json

    from nsframe.embeddings import EmbeddingFunctionNotFoundError

    # A table someone else made with a function of their own, never registered here.
    entry = {"name": "their-own", "model": {"size": "big"}, "source_column": "text",
             "vector_column": "vector"}
    schema = pa.schema([("text", pa.string()), ("vector", pa.list_(pa.float32(), 2))],
                       metadata={"embedding_functions": json.dumps([entry])})
    table = conn.create_table(f"{ns}$theirs", pa.table(
        {"text": ["a", "b"], "vector": [[1.0, 0.0], [0.0, 1.0]]}, schema=schema))
    w = _open(conn, table)
    assert w.search.mode.value == "meaning"
    assert [label for label, _ in w.search.function.options] == [
        "their-own size=big on text → vector"]
    w.search.text.value = "a"
    w.search.search_button.click()
    _assert_error_shown(w, EmbeddingFunctionNotFoundError, "their-own", "register_callable")
    assert not _text(w.preview.rows.value).startswith("search:")
    w.search.mode.value = "vector of row #"  # the other searches still work
    w.search.search_button.click()
    assert w.messages.last_error is None, w.messages.value


def test_the_function_is_named_without_its_default_parameters() -> None:
    from nsframe.embeddings import EmbeddingSpec
    from nsframe.widgets._search import describe

    # LanceDB stores every parameter (and its retry count); nsframe only those given.
    lancedb = {"name": "all-MiniLM-L6-v2", "device": "cpu", "normalize": True,
               "trust_remote_code": True, "max_retries": 7}
    assert describe(EmbeddingSpec("sentence-transformers", lancedb, "text", "vector")) == \
        "sentence-transformers all-MiniLM-L6-v2 trust_remote_code=True on text"
    assert describe(EmbeddingSpec("sentence-transformers", {}, "body", "vector")) == \
        "sentence-transformers all-MiniLM-L6-v2 on body"
    assert describe(EmbeddingSpec("nsframe-hashing", {"dim": 64}, "text", "v")) == \
        "nsframe-hashing on text"
