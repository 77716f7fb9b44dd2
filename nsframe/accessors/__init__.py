"""``df.ns`` for pandas and polars, registered without importing either library.

`register` registers the accessor of a library already imported at once, and installs
an import hook that registers the other as soon as it is imported, so ``import
nsframe`` stays light and the import order does not matter.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

ACCESSOR_MODULES = {
    "pandas": "nsframe.accessors._pandas",
    "polars": "nsframe.accessors._polars",
}
_waiting: set[str] = set()


def _register(library: str) -> None:
    try:
        importlib.import_module(ACCESSOR_MODULES[library])
    except Exception as exc:  # never break the user's own import of the library
        warnings.warn(f"nsframe could not register df.ns for {library}: {exc}",
                      RuntimeWarning, stacklevel=2)


class _ThenRegister(importlib.abc.Loader):
    """Runs the library's own loader, then registers the accessor."""

    def __init__(self, loader: Any, library: str) -> None:
        self._loader = loader
        self._library = library

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module keeps its real loader (importlib.resources and friends use it).
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _waiting.discard(self._library)
        _register(self._library)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._local = threading.local()

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _waiting or getattr(self._local, "busy", False):
            return None
        # Ask the other finders; libraries also call find_spec("polars") just to see if
        # it is installed, so we stay waiting until the module is really executed.
        self._local.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._local.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenRegister(spec.loader, fullname)
        return spec


_finder = _RegisterOnImport()


def register() -> None:
    """Register ``ns`` on the frames of pandas and polars, now or when they are imported."""
    for library in ACCESSOR_MODULES:
        if library in sys.modules:
            _register(library)
        else:
            _waiting.add(library)
    if _waiting and _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
