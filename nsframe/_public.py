"""Public names shown by their public path in reprs and tracebacks (``nsframe.Table``,
not ``nsframe._table.Table``), as httpx does."""

from __future__ import annotations

from typing import Any


def show_public(namespace: dict[str, Any], module: str) -> None:
    """Give each class that ``namespace``'s ``__all__`` exports from a private module
    (``nsframe._...``) the public ``module`` as its ``__module__``."""
    for name in namespace["__all__"]:
        obj = namespace[name]
        if isinstance(obj, type) and obj.__module__.startswith("nsframe._"):
            obj.__module__ = module
