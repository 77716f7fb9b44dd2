"""The search panel: a text query, or the vector of a row, with a filter; results go to
the preview."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import pyarrow as pa

from nsframe import Query, Table
from nsframe.widgets._messages import MessageBox

TEXT, VECTOR = "text", "vector of row #"
PREFILTER, POSTFILTER = "filter, then search", "search, then filter"
HIDDEN, SHOWN = "none", "flex"
# Descriptions as wide as their text: a fixed width cuts "vector column" to "vector col...".
WIDE = {"description_width": "initial"}


def vector_columns(schema: pa.Schema) -> list[str]:
    """Columns that hold embeddings: fixed-size lists of floats (as the server wants)."""
    found = []
    for field in schema:
        kind = field.type
        if pa.types.is_fixed_size_list(kind) and pa.types.is_floating(kind.value_type):
            found.append(field.name)
    return found


class SearchPanel(widgets.VBox):  # type: ignore[misc]
    """Search the selected table view; ``show(rows, caption)`` receives the results."""

    def __init__(self, messages: MessageBox, view: Callable[[], Table | None],
                 show: Callable[[pa.Table, str], None], reset: Callable[[], None]) -> None:
        self._messages, self._view, self._show, self._reset = messages, view, show, reset
        self.mode = widgets.ToggleButtons(options=[TEXT, VECTOR], value=TEXT,
                                          description="search by", style=WIDE)
        self.text = widgets.Text(placeholder="words to find (needs an FTS index)",
                                 description="text", style=WIDE,
                                 layout=widgets.Layout(width="360px"))
        self.row = widgets.BoundedIntText(value=0, min=0, max=10**12, description="row #",
                                          style=WIDE, layout=widgets.Layout(width="160px"))
        self.vector_column = widgets.Dropdown(description="vector column", options=[],
                                              style=WIDE, layout=widgets.Layout(width="auto"))
        self.filter = widgets.Text(placeholder="SQL filter, e.g. id > 2", description="filter",
                                   style=WIDE, layout=widgets.Layout(width="360px"))
        # LanceDB's default: filter first, so `limit` rows come back whenever that many
        # match; after the search, fewer may (the nearest rows that also match).
        self.filter_order = widgets.ToggleButtons(options=[PREFILTER, POSTFILTER],
                                                  value=PREFILTER, style=WIDE,
                                                  tooltips=["prefilter (the default)",
                                                            "postfilter"])
        self.limit = widgets.BoundedIntText(value=10, min=1, max=10_000, description="limit",
                                            style=WIDE, layout=widgets.Layout(width="140px"))
        self.search_button = widgets.Button(description="Search", button_style="primary",
                                            icon="search")
        self.clear_button = widgets.Button(description="Back to rows")
        self.search_button.on_click(messages.guard(lambda _: self.run()))
        self.clear_button.on_click(messages.guard(lambda _: self._reset()))
        self.by_text = widgets.HBox([self.text])
        self.by_vector = widgets.HBox([self.row, self.vector_column],
                                      layout=widgets.Layout(display=HIDDEN))
        self.mode.observe(lambda _: self._show_fields(), names="value")
        wrap = widgets.Layout(flex_flow="row wrap", align_items="center")
        super().__init__([
            self.mode,
            self.by_text,
            self.by_vector,
            widgets.HBox([self.filter, self.filter_order], layout=wrap),
            widgets.HBox([self.limit, self.search_button, self.clear_button], layout=wrap),
        ])
        self.add_class("nsframe-search")

    def _show_fields(self) -> None:
        """Only the fields of the chosen kind of search."""
        vector = self.mode.value == VECTOR
        self.by_vector.layout.display = SHOWN if vector else HIDDEN
        self.by_text.layout.display = HIDDEN if vector else SHOWN

    def use_schema(self, schema: pa.Schema) -> None:
        """Offer the vector columns of the selected table."""
        columns = vector_columns(schema)
        if list(self.vector_column.options) != columns:
            self.vector_column.options = columns
            self.vector_column.value = columns[0] if columns else None

    def query(self, view: Table) -> tuple[Query, str]:
        """The query the panel's fields describe, and a caption for its results."""
        condition = self.filter.value.strip()
        if self.mode.value == VECTOR:
            column = self.vector_column.value
            if not column:
                raise ValueError("This table has no vector column to search by.")
            row = self.row.value
            found = view.search().select([column]).limit(1).offset(row).to_arrow()
            if found.num_rows == 0:
                raise ValueError(f"There is no row #{row} here; pick a row number shown "
                                 "in the preview.")
            query = view.search(found.column(column)[0].as_py(), column=column)
            what = f"nearest to row #{row} by {column}"
        elif self.text.value.strip():
            query = view.search(text=self.text.value.strip())
            what = f"matching {self.text.value.strip()!r}"
        elif condition:
            query, what = view.search(), "rows"
        else:
            raise ValueError("Type words to find, a filter, or search by the vector of a row.")
        if condition:
            prefilter = self.filter_order.value == PREFILTER
            query = query.where(condition, prefilter=prefilter)
            what += f" where {condition}"
            if query.is_search and not prefilter:
                what += " (filtered after the search)"
        return query.limit(self.limit.value), what

    def run(self) -> None:
        view = self._view()
        if view is None:
            raise ValueError("Pick a table first.")
        try:
            query, what = self.query(view)
            rows = query.to_arrow()
        except Exception:
            # The last search's results would stay under the error with their heading,
            # as if they answered this one: show the table's rows again.
            self._reset()
            raise
        self._show(rows, f"search: {rows.num_rows} {what}")
        self._messages.info(f"Search found {rows.num_rows} rows; 'Back to rows' returns "
                            "to the table.")
