"""The examples are tests: every Python example in README.md and docs/*.md (run by Sybil) and
every ``>>>`` example in the package's docstrings (pytest's ``--doctest-modules``).
`make examples` runs both; `make test` runs it.

A page's examples run in order, in one namespace, in an empty temporary folder that is the
current directory while they run: ``nsframe.connect("./data")`` on a page makes its data
there. Connections a page leaves open are closed at its end.

A docstring's examples get the names `doctest_namespace` puts in below: ``nsframe``, ``pd``,
``pa``, ``conn`` (a connection to an embedded server, emptied before each docstring) and
``tbl``, its table ``items`` of three rows, made afresh for each docstring::

    id  name    vector
    1   tea     [0.1, 0.9]
    2   coffee  [0.8, 0.2]
    3   cocoa   [0.5, 0.5]
"""

from __future__ import annotations

import contextlib
import doctest
import inspect
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

HERE = Path(__file__).parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _enter_empty_folder(namespace: dict[str, Any]) -> None:
    folder = tempfile.TemporaryDirectory(prefix="nsframe-docs-")
    namespace["_folder"], namespace["_cwd"] = folder, os.getcwd()
    os.chdir(folder.name)


def _close_and_leave(namespace: dict[str, Any]) -> None:
    import nsframe

    for value in list(namespace.values()):
        # what a page left open, also when one of its examples failed half-way
        if isinstance(value, (nsframe.Connection, contextlib.ExitStack)):
            value.close()
    nsframe.set_default(None)
    os.chdir(namespace["_cwd"])
    namespace["_folder"].cleanup()


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(doctest_optionflags=FLAGS), SkipParser()],
    patterns=["README.md", "docs/*.md"],
    setup=_enter_empty_folder,
    teardown=_close_and_leave,
).pytest()


# `nsframe/__init__.py` presents its classes as `nsframe.Table` & co. (their ``__module__``),
# so doctest, looking for the examples of module `nsframe`, finds those classes but skips
# their methods: a method's globals are those of the private module that defines it
# (`nsframe._table`), and that module skips the class, whose ``__module__`` is not its own.
# Methods of the classes `nsframe` presents count as part of `nsframe`.
_from_module = doctest.DocTestFinder._from_module


def _from_nsframe(self: doctest.DocTestFinder, module: Any, obj: Any) -> bool:
    if module is not None and module.__name__ == "nsframe" and inspect.isfunction(obj) \
            and "." in obj.__qualname__ and obj.__module__.startswith("nsframe."):
        return True
    return bool(_from_module(self, module, obj))


doctest.DocTestFinder._from_module = _from_nsframe  # type: ignore[method-assign]


ROWS = {
    "id": [1, 2, 3],
    "name": ["tea", "coffee", "cocoa"],
    "vector": [[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]],
}


@pytest.fixture(scope="session")
def _docstring_connection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import nsframe

    with nsframe.connect(str(tmp_path_factory.mktemp("docstrings"))) as conn:
        yield conn


@pytest.fixture(autouse=True)
def _docstring_names(request: pytest.FixtureRequest) -> Iterator[None]:
    """For docstring examples only: fresh ``conn`` contents and ``tbl``, in a temporary
    current directory. Other tests do not pay for it."""
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    import pandas as pd
    import pyarrow as pa

    import nsframe

    conn = request.getfixturevalue("_docstring_connection")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.chdir(request.getfixturevalue("tmp_path"))
    names = request.getfixturevalue("doctest_namespace")
    names.update(nsframe=nsframe, pd=pd, pa=pa, conn=conn,
                 tbl=conn.create_table("items", ROWS))
    yield
    nsframe.set_default(None)
    for ident in conn.table_names():
        conn.drop_table(ident)
    for ident in conn.namespaces():
        conn.drop_namespace(ident, behavior="cascade")
