"""`Browser`: namespaces -> table -> branch / tag / version -> rows, in stock ipywidgets.

It calls only public `Connection` and `Table` methods. Handlers stay small: they fetch,
set ``options``/``value`` and leave drawing to ipywidgets. Every handler goes through
`MessageBox.guard`, so a server error shows as a message in the widget.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import traitlets

from nsframe import Connection, Table, Tag
from nsframe._protocol.defaults import MAIN_BRANCH
from nsframe._protocol.ids import DEFAULT_DELIMITER, join_id, split_id
from nsframe.exceptions import NamespaceNotFoundError
from nsframe.widgets._actions import Actions
from nsframe.widgets._messages import MessageBox
from nsframe.widgets._preview import Preview
from nsframe.widgets._render import breadcrumb_html, tag_label, tags_by_version, version_label
from nsframe.widgets._search import SearchPanel

ROOT = ""  # the value of the root namespace in the namespace picker


class Browser(widgets.VBox):  # type: ignore[misc]
    """Browse the namespaces and tables of a connection, or one table: its branches, tags
    and versions, a preview of the rows, a search panel and tag/branch/restore actions.

    The selection is readable from Python: `selected_table`, `selected_branch`,
    `selected_version`, `selected_tag`, and `selected` (a read-only `Table` view).

    Example:
        >>> from nsframe.widgets import browse
        >>> w = browse(conn)                  # display w in a notebook and click, or pick in code:
        >>> w.table_picker.value = "items"
        >>> w.selected_table, w.selected_branch, w.selected_version
        ('items', 'main', 1)
        >>> w.selected.to_pandas()
           id    name      vector
        0   1     tea  [0.1, 0.9]
        1   2  coffee  [0.8, 0.2]
        2   3   cocoa  [0.5, 0.5]
    """

    selected_table = traitlets.Unicode(None, allow_none=True, read_only=True)
    selected_branch = traitlets.Unicode(MAIN_BRANCH, read_only=True)
    selected_version = traitlets.Int(None, allow_none=True, read_only=True)
    selected_tag = traitlets.Unicode(None, allow_none=True, read_only=True)

    def __init__(self, source: Connection | Table, *, connection: Connection | None = None):
        if isinstance(source, Connection):
            connection, start = source, None
        elif isinstance(source, Table):
            start = source
        else:
            raise TypeError(f"browse() takes a Connection or a Table, got {type(source).__name__}.")
        self._connection = connection
        self._table: Table | None = None
        self._tags: dict[str, Tag] = {}
        self._busy = 0
        self.messages = MessageBox()
        self.breadcrumb = widgets.HTML(breadcrumb_html([]))
        wide = {"description_width": "initial"}
        self.namespace_picker = widgets.Dropdown(description="namespace", options=[],
                                                 style=wide)
        self.table_picker = widgets.Dropdown(description="table", options=[], style=wide)
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.branch_picker = widgets.Dropdown(description="branch", options=[MAIN_BRANCH],
                                              value=MAIN_BRANCH, style=wide,
                                              layout=widgets.Layout(width="auto"))
        self.tag_list = widgets.Select(description="tags", options=[], rows=5, style=wide,
                                       layout=widgets.Layout(width="auto"))
        self.tag_list.add_class("nsframe-tags")
        # The timeline takes the room left of the branch and tag pickers, so its labels
        # (version, time, tags, change) show whole at a notebook's usual width.
        self.version_list = widgets.Select(description="versions", options=[], rows=7,
                                           style=wide, layout=widgets.Layout(
                                               flex="1 1 auto", width="auto",
                                               min_width="480px"))
        self.version_list.add_class("nsframe-versions")
        self.preview = Preview(self.messages)
        self.search = SearchPanel(self.messages, lambda: self.selected, self.preview.show_results,
                                  self._show_selection)
        self.actions = Actions(self.messages)
        super().__init__([
            self.breadcrumb,
            widgets.HBox([self.namespace_picker, self.table_picker, self.refresh_button],
                         layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([widgets.VBox([self.branch_picker, self.tag_list]), self.version_list],
                         layout=widgets.Layout(width="100%")),
            self.actions,
            self.messages,
            widgets.Accordion(children=[self.search], titles=("Search",)),
            self.preview,
        ])
        self.add_class("nsframe-browser")
        self._wire()
        self.messages.guard(self._start)(start)

    # ------------------------------------------------------------------ selection
    @property
    def table(self) -> Table | None:
        """A handle on the chosen table (main branch, latest version).

        Example:
            >>> from nsframe.widgets import browse
            >>> w = browse(conn)
            >>> w.table is None
            True
            >>> w.table_picker.value = "items"
            >>> w.table
            Table('items', main)
        """
        return self._table

    @property
    def selected(self) -> Table | None:
        """A read-only view of the chosen table at the chosen branch and version.

        Example:
            >>> from nsframe.widgets import browse
            >>> w = browse(tbl)                 # at one table: its latest version is selected
            >>> w.selected
            Table('items', main, version 1)
            >>> w.selected.count_rows()
            3
        """
        if self._table is None or self.selected_version is None:
            return None
        return self._table.branch(self.selected_branch).at(self.selected_version)

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        # Setting options/value from code fires the same observers as a click: skip them.
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def _wire(self) -> None:
        guard = self.messages.guard
        for picker, handler in [(self.namespace_picker, self._on_namespace),
                                (self.table_picker, self._on_table),
                                (self.branch_picker, self._on_branch),
                                (self.version_list, self._on_version),
                                (self.tag_list, self._on_tag)]:
            picker.observe(guard(handler), names="value")
        self.refresh_button.on_click(guard(lambda _: self.refresh()))
        self.actions.tag_button.on_click(guard(lambda _: self._ask_tag()))
        self.actions.branch_button.on_click(guard(lambda _: self._ask_branch()))
        self.actions.restore_button.on_click(guard(lambda _: self._ask_restore()))

    def _start(self, start: Table | None) -> None:
        if start is None:
            self._list_namespaces(ROOT)
            return
        namespace = self._id_of(start.namespace)
        if self._connection is None:
            # Only a table was given: there is nothing public to list its neighbours with.
            with self._quietly():
                self.namespace_picker.options = [(namespace or "(root)", namespace)]
                self.namespace_picker.value = namespace
                self.table_picker.options = [start.name]
                self.table_picker.value = start.name
            self.namespace_picker.disabled = self.table_picker.disabled = True
        else:
            self._list_namespaces(namespace, table=start.name)
        self._open_table(start.latest().branch(MAIN_BRANCH), start.branch_name, start.ref.version)

    # ------------------------------------------------------------------ loading
    def _delimiter(self) -> str:
        return self._connection.delimiter if self._connection is not None else DEFAULT_DELIMITER

    def _id_of(self, parts: tuple[str, ...]) -> str:
        return join_id(parts, self._delimiter()) if parts else ROOT

    def _namespace_ids(self, namespace: str) -> list[str]:
        """The path from the root down to `namespace`, then its children.

        One level at a time, like a file dialog: a server with thousands of namespaces
        costs one listing per step, and a nested namespace is never cut off a long list.
        """
        assert self._connection is not None
        delimiter = self._delimiter()
        parts = split_id(namespace, delimiter) if namespace else []
        path = [ROOT] + [join_id(parts[:depth], delimiter) for depth in range(1, len(parts) + 1)]
        return path + sorted(self._connection.namespaces(namespace))

    def _list_namespaces(self, namespace: str, table: str | None = None) -> None:
        try:
            ids = self._namespace_ids(namespace)
        except NamespaceNotFoundError:
            if not namespace:
                raise
            # Dropped by someone else since it was picked: step up to its parent.
            parent = namespace.rpartition(self._delimiter())[0]
            self._list_namespaces(parent)
            self.messages.info(f"Namespace {namespace!r} no longer exists.")
            return
        labels = [(i.replace(self._delimiter(), " / ") if i else "(root)", i) for i in ids]
        with self._quietly():
            self.namespace_picker.options = labels
            self.namespace_picker.value = namespace
        self._list_tables(namespace, table)

    def _list_tables(self, namespace: str, table: str | None) -> None:
        assert self._connection is not None
        names = self._connection.namespace(namespace).table_names()
        with self._quietly():
            self.table_picker.options = names
            self.table_picker.value = table if table in names else None
        if self.table_picker.value is None:
            self._close_table()

    def _close_table(self) -> None:
        self._table = None
        with self._quietly():
            self.branch_picker.options, self.branch_picker.value = [MAIN_BRANCH], MAIN_BRANCH
            self.tag_list.options, self.version_list.options = [], []
        self._set_selection(None, MAIN_BRANCH, None, None)
        self.preview.clear("Pick a table.")

    def _open_table(self, table: Table, branch: str = MAIN_BRANCH,
                    version: int | None = None) -> None:
        """Load the branches and tags of ``table``, then show ``branch`` at ``version``."""
        branches = [MAIN_BRANCH, *sorted(table.branches())]
        self._table = table
        self._load_tags()
        with self._quietly():
            self.branch_picker.options = branches
            self.branch_picker.value = branch if branch in branches else MAIN_BRANCH
        self._open_branch(self.branch_picker.value, version)

    def _load_tags(self) -> None:
        assert self._table is not None
        self._tags = self._table.tags()
        with self._quietly():
            current = self.tag_list.value
            self.tag_list.options = [(tag_label(t), t.name) for t in self._tags.values()]
            self.tag_list.value = current if current in self._tags else None

    def _open_branch(self, branch: str, version: int | None = None,
                     tag: str | None = None) -> None:
        """Fill the timeline of ``branch`` (newest first) and select ``version`` (latest)."""
        assert self._table is not None
        versions = self._table.branch(branch).versions()
        on_version = tags_by_version(self._tags.values(), branch)
        numbers = [v.version for v in versions]
        chosen = version if version in numbers else (numbers[-1] if numbers else None)
        with self._quietly():
            if self.branch_picker.value != branch:
                self.branch_picker.value = branch
            self.version_list.options = [(version_label(v, on_version.get(v.version, [])),
                                          v.version) for v in reversed(versions)]
            self.version_list.value = chosen
        if chosen is not None:  # a declared table has no schema to search by yet
            self.search.use_schema(self._table.branch(branch).schema)
        self._select(branch, chosen, tag)

    def _select(self, branch: str, version: int | None, tag: str | None = None) -> None:
        assert self._table is not None
        with self._quietly():
            if self.tag_list.value != tag:
                self.tag_list.value = tag
        self._set_selection(self._table.id, branch, version, tag)
        self._show_selection()

    def _set_selection(self, table: str | None, branch: str, version: int | None,
                       tag: str | None) -> None:
        self.set_trait("selected_table", table)
        self.set_trait("selected_branch", branch)
        self.set_trait("selected_version", version)
        self.set_trait("selected_tag", tag)
        parts: list[str] = []
        if self._table is not None:
            parts = [*self._table.namespace, self._table.name, f"branch {branch}"]
            if version is not None:
                parts.append(f"version {version}")
            if tag is not None:
                parts.append(f"tag {tag}")
        self.breadcrumb.value = breadcrumb_html(parts)

    def _where(self) -> str:
        where = f"branch {self.selected_branch} · version {self.selected_version}"
        return where + (f" · tag {self.selected_tag}" if self.selected_tag else "")

    def _show_selection(self) -> None:
        view = self.selected
        if view is None:
            self.preview.clear("This branch has no version yet.")
        else:
            self.preview.show(view, self._where())

    def refresh(self) -> None:
        """Read everything again from the server, keeping the selection where it still is.

        Example:
            >>> from nsframe.widgets import browse
            >>> w = browse(conn)
            >>> _ = conn.create_table("more", {"id": [1]})
            >>> w.refresh()
            >>> w.table_picker.options
            ('items', 'more')
        """
        branch, version, tag = self.selected_branch, self.selected_version, self.selected_tag
        namespace = self.namespace_picker.value or ROOT
        if self._connection is not None:
            self._list_namespaces(namespace, self.table_picker.value)
        if self._table is not None:
            self._open_table(self._table, branch, version)
            if tag in self._tags:
                self._on_tag({"new": tag})
        gone = namespace != (self.namespace_picker.value or ROOT)
        self.messages.info("Refreshed from the server."
                           + (f" Namespace {namespace!r} no longer exists." if gone else ""))

    # ------------------------------------------------------------------ handlers
    def _on_namespace(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self._list_namespaces(change["new"] or ROOT)

    def _on_table(self, change: dict[str, Any]) -> None:
        if self._busy or self._connection is None:
            return
        # Clear first: if the new table fails to open, nothing of the old one stays shown.
        self._close_table()
        if change["new"] is not None:
            namespace = self._connection.namespace(self.namespace_picker.value or ROOT)
            self._open_table(namespace.table(change["new"]))

    def _on_branch(self, change: dict[str, Any]) -> None:
        if not self._busy and self._table is not None:
            self._open_branch(change["new"])

    def _on_version(self, change: dict[str, Any]) -> None:
        if not self._busy and self._table is not None:
            self._select(self.selected_branch, change["new"])

    def _on_tag(self, change: dict[str, Any]) -> None:
        if self._busy or self._table is None or change["new"] is None:
            return
        tag = self._tags[change["new"]]
        self._open_branch(tag.branch, tag.version, tag.name)
        if self.selected_version != tag.version:
            raise ValueError(f"Tag {tag.name!r} names version {tag.version} of branch "
                             f"{tag.branch!r}, which is no longer in its history.")

    # ------------------------------------------------------------------ actions
    def _target(self) -> tuple[Table, str, int]:
        if self._table is None or self.selected_version is None:
            raise ValueError("Pick a table and a version first.")
        return self._table.branch(self.selected_branch), self.selected_branch, \
            self.selected_version

    @staticmethod
    def _name(field: widgets.Text, what: str) -> str:
        name = str(field.value).strip()
        if not name:
            raise ValueError(f"Type a name for the new {what} first.")
        return name

    def _ask_tag(self) -> None:
        table, branch, version = self._target()
        name = self._name(self.actions.tag_name, "tag")

        def create() -> None:
            table.create_tag(name, version)
            self._load_tags()
            self._open_branch(branch, version)
            self.messages.info(f"Tag {name!r} now names version {version} of branch {branch}.")

        self.actions.ask(f"Create tag {name!r} on version {version} of branch {branch}?", create)

    def _ask_branch(self) -> None:
        table, branch, version = self._target()
        name = self._name(self.actions.branch_name, "branch")

        def create() -> None:
            assert self._table is not None
            latest = table.create_branch(name, from_version=version).version
            self._open_table(self._table, name, latest)
            self.messages.info(f"Branch {name!r} was created from version {version} of "
                               f"{branch}; its latest version is {latest}.")

        self.actions.ask(f"Create branch {name!r} from version {version} of branch {branch}?",
                         create)

    def _ask_restore(self) -> None:
        table, branch, version = self._target()

        def restore() -> None:
            result = table.restore(version)
            self._open_branch(branch, result.version)
            self.messages.info(f"Restored version {version} of {branch} as new version "
                               f"{result.version}.")

        self.actions.ask(f"Restore version {version} of branch {branch}? This writes a new "
                         "latest version with its rows; no version is lost.", restore)

