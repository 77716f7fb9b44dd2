"""Tag, branch and restore buttons; each asks for confirmation before it writes."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from nsframe.widgets._messages import MessageBox
from nsframe.widgets._render import confirm_html

HIDDEN, SHOWN = "none", "flex"


class Actions(widgets.VBox):  # type: ignore[misc]
    """The write actions on the selected version. A click only asks; ``Confirm`` runs the
    pending action and ``Cancel`` drops it."""

    def __init__(self, messages: MessageBox) -> None:
        self._messages = messages
        self._pending: Callable[[], None] | None = None
        self.tag_name = widgets.Text(placeholder="new tag name",
                                     layout=widgets.Layout(width="180px"))
        self.tag_button = widgets.Button(description="Tag this version", icon="tag")
        self.branch_name = widgets.Text(placeholder="new branch name",
                                        layout=widgets.Layout(width="180px"))
        self.branch_button = widgets.Button(description="Branch from it", icon="code-fork")
        self.restore_button = widgets.Button(description="Restore it", icon="undo",
                                             button_style="warning")
        self.question = widgets.HTML()
        self.confirm_button = widgets.Button(description="Confirm", button_style="danger")
        self.cancel_button = widgets.Button(description="Cancel")
        self.confirm_box = widgets.HBox([self.question, self.confirm_button,
                                         self.cancel_button],
                                        layout=widgets.Layout(display=HIDDEN))
        self.confirm_button.on_click(messages.guard(lambda _: self.confirm()))
        self.cancel_button.on_click(lambda _: self.cancel())
        super().__init__([
            widgets.HBox([self.tag_name, self.tag_button, self.branch_name, self.branch_button,
                          self.restore_button], layout=widgets.Layout(flex_flow="row wrap")),
            self.confirm_box,
        ])
        self.add_class("nsframe-actions")

    @property
    def pending(self) -> bool:
        """Whether a question waits for Confirm or Cancel."""
        return self._pending is not None

    def ask(self, question: str, action: Callable[[], None]) -> None:
        """Show ``question``; ``action`` runs only when Confirm is pressed."""
        self._pending = action
        self.question.value = confirm_html(question)
        self.confirm_box.layout.display = SHOWN

    def confirm(self) -> None:
        action, self._pending = self._pending, None
        self.confirm_box.layout.display = HIDDEN
        if action is not None:
            action()

    def cancel(self) -> None:
        self._pending = None
        self.confirm_box.layout.display = HIDDEN
        self._messages.info("Cancelled: nothing was changed.")
