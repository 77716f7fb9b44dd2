"""The preview: a page of rows at the selection (or search results) and the schema."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pyarrow as pa
import traitlets

from nsframe import Table
from nsframe.widgets._messages import MessageBox
from nsframe.widgets._render import rows_html, schema_html

PAGE_SIZES = (10, 25, 50, 100)


class ColumnChoice(widgets.HBox):  # type: ignore[misc]
    """A checkbox per column, wrapped over lines. (A multi-select list showed its chosen
    columns greyed out until clicked, which read as disabled.)

    ``options`` are the column names, ``value`` the ticked ones, in table order.
    """

    options = traitlets.Tuple()
    value = traitlets.Tuple()

    def __init__(self) -> None:
        super().__init__(layout=widgets.Layout(flex_flow="row wrap", width="100%"))
        self.add_class("nsframe-columns")
        self._boxes: dict[str, widgets.Checkbox] = {}
        self._syncing = False
        self.observe(self._on_options, names="options")
        self.observe(self._on_value, names="value")

    def _on_options(self, change: dict[str, Any]) -> None:
        self._boxes = {name: widgets.Checkbox(value=name in self.value, description=name,
                                              indent=False,
                                              layout=widgets.Layout(width="auto",
                                                                    margin="0 12px 0 0"))
                       for name in change["new"]}
        for box in self._boxes.values():
            box.observe(self._on_box, names="value")
        self.children = [widgets.Label("columns:", layout=widgets.Layout(margin="0 8px 0 0")),
                         *self._boxes.values()]

    def _on_box(self, _change: dict[str, Any]) -> None:
        if not self._syncing:
            self.value = tuple(n for n, box in self._boxes.items() if box.value)

    def _on_value(self, change: dict[str, Any]) -> None:
        self._syncing = True
        try:
            for name, box in self._boxes.items():
                box.value = name in change["new"]
        finally:
            self._syncing = False


class Preview(widgets.VBox):  # type: ignore[misc]
    """Rows of a table view, a page at a time, with a column choice; a Schema tab beside.

    `show(view, where)` previews a table view; `show_results(rows, caption)` shows rows
    that a search returned, until the next `show`.
    """

    def __init__(self, messages: MessageBox) -> None:
        self._messages = messages
        self._view: Table | None = None
        self._where = ""
        self._total = 0
        self._results: pa.Table | None = None
        self._results_caption = ""
        self.page = 0
        self._quiet = False
        self.columns = ColumnChoice()
        self.page_size = widgets.Dropdown(options=PAGE_SIZES, value=PAGE_SIZES[0],
                                          description="page size",
                                          style={"description_width": "initial"},
                                          layout=widgets.Layout(width="160px"))
        self.previous_button = widgets.Button(description="◀ previous",
                                              layout=widgets.Layout(width="110px"))
        self.next_button = widgets.Button(description="next ▶",
                                          layout=widgets.Layout(width="110px"))
        self.rows = widgets.HTML()
        self.rows.add_class("nsframe-preview")
        self.schema = widgets.HTML()
        self.schema.add_class("nsframe-schema")
        controls = widgets.VBox([self.columns, widgets.HBox([
            self.page_size, self.previous_button, self.next_button])])
        tabs = widgets.Tab(children=[widgets.VBox([controls, self.rows]), self.schema])
        tabs.set_title(0, "Rows")
        tabs.set_title(1, "Schema")
        super().__init__([tabs])
        guard = messages.guard
        self.columns.observe(guard(self._on_columns), names="value")
        self.page_size.observe(guard(self._on_page_size), names="value")
        self.previous_button.on_click(guard(lambda _: self.turn(-1)))
        self.next_button.on_click(guard(lambda _: self.turn(+1)))

    # ------------------------------------------------------------------ entry points
    def show(self, view: Table, where: str) -> None:
        """Preview ``view`` from its first row; ``where`` names it in the caption."""
        schema = view.schema
        total = view.count_rows()
        self._view, self._where, self._results, self.page = view, where, None, 0
        self._total = total
        self.schema.value = schema_html(schema)
        names = tuple(schema.names)
        if tuple(self.columns.options) != names:
            self._quiet = True  # one render below, not one per trait change
            try:
                self.columns.options = names
                self.columns.value = names
            finally:
                self._quiet = False
        self._render()

    @property
    def results(self) -> pa.Table | None:
        """The rows of the last search, while they are shown (None while rows of the
        table are)."""
        return self._results

    def show_results(self, rows: pa.Table, caption: str) -> None:
        """Show search results (all on one page) instead of the table's rows."""
        self._results, self._results_caption, self.page = rows, caption, 0
        self._render()

    def clear(self, text: str = "") -> None:
        self._view, self._results = None, None
        self.rows.value = f"<i>{text}</i>" if text else ""
        self.schema.value = ""

    def turn(self, step: int) -> None:
        """Go ``step`` pages forward (or back), within the rows there are."""
        last = max(0, (self._total - 1) // self.page_size.value)
        page = min(max(0, self.page + step), last)
        if page != self.page:
            self.page = page
            self._render()

    # ------------------------------------------------------------------ rendering
    def _chosen(self) -> list[str] | None:
        # No column ticked reads as "all columns", not as an empty table.
        chosen = list(self.columns.value)
        return chosen or None

    def _render(self) -> None:
        if self._results is not None:
            rows = self._results
            chosen = [c for c in self._chosen() or rows.column_names if c in rows.column_names]
            extra = [c for c in rows.column_names if c.startswith("_")]  # _distance, _score
            self.rows.value = rows_html(rows.select(chosen + [c for c in extra
                                                              if c not in chosen]),
                                        self._results_caption)
            self._set_paging(False)
            return
        if self._view is None:
            return
        size = self.page_size.value
        start = self.page * size
        query = self._view.search()
        if self._chosen() is not None:
            query = query.select(self._chosen() or [])
        rows = query.limit(size).offset(start).to_arrow()
        end = start + rows.num_rows
        span = f"rows {start + 1}-{end}" if rows.num_rows else "no rows"
        caption = f"{self._where}: {span} of {self._total} rows"
        self.rows.value = rows_html(rows, caption, first_row=start)
        self._set_paging(True)

    def _set_paging(self, enabled: bool) -> None:
        size = self.page_size.value
        self.previous_button.disabled = not enabled or self.page == 0
        self.next_button.disabled = not enabled or (self.page + 1) * size >= self._total

    def _on_columns(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._render()

    def _on_page_size(self, _change: dict[str, Any]) -> None:
        self.page = 0
        self._render()
