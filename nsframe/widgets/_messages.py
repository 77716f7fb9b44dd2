"""The message box: what the last action did, or why it failed, as readable HTML."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as widgets

from nsframe.widgets._render import error_html, notice_html

log = logging.getLogger("nsframe.widgets")
F = TypeVar("F", bound=Callable[..., Any])


class MessageBox(widgets.HTML):  # type: ignore[misc]
    """One line of feedback under the pickers; `guard` routes a handler's errors here."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.add_class("nsframe-message")
        self.last_error: BaseException | None = None

    def info(self, text: str) -> None:
        self.last_error = None
        self.value = notice_html(text)

    def error(self, exc: BaseException) -> None:
        self.last_error = exc
        self.value = error_html(exc)

    def clear(self) -> None:
        self.last_error = None
        self.value = ""

    def guard(self, handler: F) -> F:
        """Wrap a widget callback so an exception shows here instead of as a traceback in
        the output area (ipywidgets would print it there)."""

        @functools.wraps(handler)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self.clear()  # a message speaks of the last thing the person did, not older ones
            try:
                return handler(*args, **kwargs)
            except Exception as exc:  # every failure must reach the person, readably
                log.debug("widget handler %s failed", handler.__name__, exc_info=True)
                self.error(exc)
                return None

        return guarded  # type: ignore[return-value]
