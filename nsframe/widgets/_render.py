"""HTML for the browser's read-only parts: rows, schema, messages, timeline labels.

Pure functions of their inputs (no widgets, no server), so they are easy to test and the
widget handlers stay small.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from nsframe import Tag, Version
from nsframe.exceptions import APIError, ConnectionClosedError, TransportError

MAX_CELL_CHARS = 80
MAX_VECTOR_ITEMS = 4

_BOX = ("padding:6px 10px;margin:4px 0;border-radius:4px;border:1px solid {border};"
        "background:{background};color:#1f2328")
ERROR_STYLE = _BOX.format(border="#d1242f", background="#ffebe9")
NOTICE_STYLE = _BOX.format(border="#1a7f37", background="#dafbe1")
CONFIRM_STYLE = _BOX.format(border="#9a6700", background="#fff8c5")
TABLE_STYLE = "border-collapse:collapse;font-size:12px"
# One line per row: a long text is cut with an ellipsis (its whole value is the cell's
# tooltip), so a page of rows stays a page, not a wall of wrapped text.
CELL_STYLE = ("border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top;"
              "white-space:nowrap;max-width:32em;overflow:hidden;text-overflow:ellipsis")
# Wide tables scroll sideways inside the widget instead of running off the page. The
# zero width keeps the table's own width out of the widget's (a flex item grows to its
# content's narrowest width), so the widget, and the caption above, keep the notebook's.
SCROLL_STYLE = "overflow-x:auto;width:0;min-width:100%"


def cell_text(value: Any) -> str:
    """One cell as short text: vectors show their first items and their length."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_number(v) for v in value[:MAX_VECTOR_ITEMS])
        more = ", …" if len(value) > MAX_VECTOR_ITEMS else ""
        return f"[{items}{more}] ({len(value)})"
    text = _number(value)
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS - 1] + "…"


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def rows_html(rows: pa.Table, caption: str, *, first_row: int = 0) -> str:
    """An HTML table of ``rows`` under ``caption``; the first column numbers the rows."""
    head = "".join(f"<th style='{CELL_STYLE}'>{html.escape(n)}</th>"
                   for n in ["#", *rows.column_names])
    body = []
    for i, row in enumerate(rows.to_pylist()):
        cells = [str(first_row + i), *(cell_text(row[n]) for n in rows.column_names)]
        body.append("<tr>" + "".join(f"<td style='{CELL_STYLE}' title='{html.escape(c)}'>"
                                     f"{html.escape(c)}</td>" for c in cells) + "</tr>")
    empty = "" if body else "<p><i>no rows</i></p>"
    return (f"<div><b>{html.escape(caption)}</b><div style='{SCROLL_STYLE}'>"
            f"<table style='{TABLE_STYLE}'><tr>{head}</tr>{''.join(body)}</table></div>"
            f"{empty}</div>")


def schema_html(schema: pa.Schema) -> str:
    """The columns of a table with their Arrow types."""
    body = "".join(
        f"<tr><td style='{CELL_STYLE}'>{html.escape(f.name)}</td>"
        f"<td style='{CELL_STYLE}'><code>{html.escape(str(f.type))}</code></td>"
        f"<td style='{CELL_STYLE}'>{'yes' if f.nullable else 'no'}</td></tr>"
        for f in schema)
    head = "".join(f"<th style='{CELL_STYLE}'>{h}</th>" for h in ("column", "type", "nullable"))
    return f"<table style='{TABLE_STYLE}'><tr>{head}</tr>{body}</table>"


def error_html(exc: BaseException) -> str:
    """A server or client error as a readable message (never a traceback)."""
    if isinstance(exc, APIError):
        # What to do first, in the client's words; the HTTP status last, for the curious.
        title = f"{type(exc).__name__} (HTTP {exc.status})"
        detail = exc.message
    elif isinstance(exc, ConnectionClosedError):
        title, detail = "The connection is closed", str(exc)
    elif isinstance(exc, TransportError):
        title, detail = "The server could not be reached", str(exc)
    else:
        title, detail = type(exc).__name__, str(exc)
    return (f"<div class='nsframe-error' style='{ERROR_STYLE}'><b>{html.escape(title)}</b>"
            f"<br>{html.escape(detail or 'no detail')}</div>")


def notice_html(text: str) -> str:
    return f"<div class='nsframe-notice' style='{NOTICE_STYLE}'>{html.escape(text)}</div>"


def confirm_html(text: str) -> str:
    return f"<div style='{CONFIRM_STYLE}'>{html.escape(text)}</div>"


def breadcrumb_html(parts: Sequence[str]) -> str:
    """``root / ns / table / branch dev / version 3``."""
    crumbs = " / ".join(html.escape(p) for p in ["root", *parts])
    return f"<div class='nsframe-breadcrumb'><b>{crumbs}</b></div>"


def tags_by_version(tags: Iterable[Tag], branch: str) -> dict[int, list[str]]:
    """The tag names on each version of ``branch``."""
    found: dict[int, list[str]] = {}
    for tag in tags:
        if tag.branch == branch:
            found.setdefault(tag.version, []).append(tag.name)
    return found


def change_text(metadata: Mapping[str, str]) -> str:
    """What a version did, from the operation the server read off its transaction."""
    operation = metadata.get("operation", "")
    if "predicate" in metadata:
        # A predicate may span lines (or end in a comment-closing newline): show one line.
        predicate = " ".join(metadata["predicate"].split())
        return f"{operation} where {predicate.replace('( ', '(').replace(' )', ')')}"
    if "restored_version" in metadata:
        return f"{operation} of v{metadata['restored_version']}"
    return operation or "?"


MAX_CHANGE_CHARS = 48


def version_label(version: Version, tags: Sequence[str]) -> str:
    """One line of the timeline: ``v3 · 2026-11-22 04:50 · [clean] · Delete where id = 1``.

    The tags come before the change, and a long change is shortened, so the tags are
    never the part a narrow list cuts off.
    """
    when = version.timestamp.strftime("%Y-%m-%d %H:%M") if version.timestamp else "?"
    change = change_text(version.metadata)
    if len(change) > MAX_CHANGE_CHARS:
        change = change[:MAX_CHANGE_CHARS - 1] + "…"
    named = f"[{', '.join(sorted(tags))}] · " if tags else ""
    return f"v{version.version} · {when} · {named}{change}"


def tag_label(tag: Tag) -> str:
    return f"{tag.name} → {tag.branch} v{tag.version}"
