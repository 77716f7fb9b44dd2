"""The search panel: a question searched by meaning (when the table has an embedding
function), words in a full-text index, or the vector of a row, with a filter; results go
to the preview."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any

import ipywidgets as widgets
import pyarrow as pa

from nsframe import Query, Table
from nsframe.embeddings import (
    EmbeddingFunctionNotFoundError,
    EmbeddingSpec,
    get_registry,
    read_specs,
)
from nsframe.embeddings.base import LANCEDB_COMMON
from nsframe.widgets._messages import MessageBox

MEANING, TEXT, VECTOR = "meaning", "full text", "vector of row #"
PLACEHOLDERS = {MEANING: "a question or a phrase, searched by meaning",
                TEXT: "words to find (needs an FTS index)"}
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


def describe(spec: EmbeddingSpec) -> str:
    """The function as a person names it: ``sentence-transformers all-MiniLM-L6-v2 on text``.

    The model's name comes from the class's defaults when the table left it out (nsframe
    stores only the parameters given to ``create``). Other parameters follow when they
    differ from the defaults (LanceDB stores them all, and its retry count too).
    """
    defaults: dict[str, Any] = {}
    # Not runnable here: the search will say so; meanwhile name it in the table's words.
    with suppress(EmbeddingFunctionNotFoundError, ImportError):
        defaults = {**LANCEDB_COMMON, **get_registry().get(spec.name).defaults}
    params = {**defaults, **spec.model}
    words = [spec.name]
    if params.get("name") is not None:
        words.append(str(params["name"]))
    words += [f"{k}={v}" for k, v in spec.model.items()
              if k != "name" and (k not in defaults or defaults[k] != v)]
    return f"{' '.join(words)} on {spec.source_column}"


class SearchPanel(widgets.VBox):  # type: ignore[misc]
    """Search the selected table view; ``show(rows, caption)`` receives the results."""

    def __init__(self, messages: MessageBox, view: Callable[[], Table | None],
                 show: Callable[[pa.Table, str], None], reset: Callable[[], None]) -> None:
        self._messages, self._view, self._show, self._reset = messages, view, show, reset
        self.mode = widgets.ToggleButtons(options=[TEXT, VECTOR], value=TEXT,
                                          description="search by", style=WIDE)
        self.text = widgets.Text(placeholder=PLACEHOLDERS[TEXT], description="text",
                                 style=WIDE, layout=widgets.Layout(width="360px"))
        # Vector column -> the function that fills it, from the table's schema metadata.
        self.functions: dict[str, EmbeddingSpec] = {}
        self.function = widgets.Dropdown(description="function", options=[], style=WIDE,
                                         layout=widgets.Layout(width="auto",
                                                               display=HIDDEN))
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
        self.by_text = widgets.HBox([self.text, self.function],
                                    layout=widgets.Layout(flex_flow="row wrap"))
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
        self.function.layout.display = SHOWN if self.mode.value == MEANING else HIDDEN
        if not vector:
            self.text.placeholder = PLACEHOLDERS[self.mode.value]

    def use_schema(self, schema: pa.Schema) -> None:
        """Offer the vector columns of the selected table, and search by meaning when it
        has an embedding function (the first mode then)."""
        columns = vector_columns(schema)
        if list(self.vector_column.options) != columns:
            self.vector_column.options = columns
            self.vector_column.value = columns[0] if columns else None
        try:
            specs = read_specs(schema.metadata)
        except ValueError as exc:  # the rows still show; only this mode is off
            specs = []
            self._messages.info(f"Search by meaning is off for this table: {exc}")
        functions = {s.vector_column: s for s in specs}
        if functions == self.functions:
            return
        self.functions = functions
        self.function.options = [(f"{describe(s)} → {s.vector_column}", s.vector_column)
                                 for s in specs]
        self.function.value = specs[0].vector_column if specs else None
        modes = [MEANING, TEXT, VECTOR] if specs else [TEXT, VECTOR]
        if list(self.mode.options) != modes:
            self.mode.options = modes
            self.mode.value = modes[0]
            self._show_fields()

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
        elif self.text.value.strip() and self.mode.value == MEANING:
            spec = self.functions[self.function.value]
            asked = self.text.value.strip()
            # The table's own function embeds the question (in this client).
            query = view.search(asked, column=spec.vector_column, query_type="vector")
            what = f"nearest in meaning to {asked!r} ({describe(spec)})"
        elif self.text.value.strip():
            query = view.search(text=self.text.value.strip())
            what = f"matching {self.text.value.strip()!r}"
        elif condition:
            query, what = view.search(), "rows"
        else:
            words = "a question" if self.mode.value == MEANING else "words to find"
            raise ValueError(f"Type {words}, a filter, or search by the vector of a row.")
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
