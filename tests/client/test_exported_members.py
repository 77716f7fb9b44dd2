"""`nsframe.__all__` is sorted, complete and importable (as httpx checks its own)."""

from __future__ import annotations

import inspect

import nsframe
from nsframe import exceptions


def test_all_is_sorted_and_unique() -> None:
    assert nsframe.__all__ == sorted(set(nsframe.__all__))


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(nsframe) if not name.startswith("_")}
    # `from __future__`, and public subpackages that other imports may have loaded.
    public -= {"annotations", "server", "widgets", "accessors", "datasets", "embeddings",
               "rerankers"}
    assert public == set(nsframe.__all__) - {"__version__"}


def test_exports_resolve_and_show_the_public_module() -> None:
    for name in nsframe.__all__:
        obj = getattr(nsframe, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            assert obj.__module__ == "nsframe", name


def test_exception_exports_are_the_shared_classes() -> None:
    for name in ("APIError", "NsframeError", "TransportError", "RequestTimeoutError",
                 "NotFoundError", "TableNotFoundError"):
        assert getattr(nsframe, name) is getattr(exceptions, name)
    assert issubclass(nsframe.ReadOnlyTableError, nsframe.NsframeError)
    assert issubclass(nsframe.ReadOnlyTableError, ValueError)


def test_public_methods_have_docstrings() -> None:
    for cls in (nsframe.Connection, nsframe.Table, nsframe.Query, nsframe.Namespace):
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(member) or name in ("add", "list_versions"):
                continue
            assert member.__doc__, f"{cls.__name__}.{name} has no docstring"
