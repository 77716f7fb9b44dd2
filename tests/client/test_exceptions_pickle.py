"""Every exception of `nsframe.exceptions` survives pickling (multiprocessing, joblib and
dask send errors between processes), with its message and attributes.

The classes are found in the module, so a new one is covered without touching this file.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import threading
from typing import Any

import pytest

from nsframe import exceptions

CLASSES = sorted(
    (obj for obj in vars(exceptions).values()
     if isinstance(obj, type) and issubclass(obj, BaseException)
     and obj.__module__ == exceptions.__name__),
    key=lambda cls: cls.__name__,
)

# Values for keyword arguments, by name; any other keyword gets a string naming it.
SAMPLES: dict[str, Any] = {
    "instance": "/v1/table/db$t/describe",
    "status": 418,  # not the class default: what the server said must survive
    "code": 99,
    "type": "/errors/teapot",
    "title": "I'm a teapot",
    "headers": {"Retry-After": "3"},
    "url": "POST http://127.0.0.1:9/v1/table/db$t/describe",
    "request_id": "abc123",
    "table": "db$t",
    "rows_committed": 7,
    "chunks_committed": 2,
    "version": 5,
    # Cannot be pickled, like a live requests.Response: it is left behind.
    "response": threading.Lock(),
}
LEFT_BEHIND = {"response": None}


def build(cls: type[BaseException]) -> BaseException:
    keywords = {name: SAMPLES.get(name, f"<{name}>")
                for name, param in inspect.signature(cls.__init__).parameters.items()
                if param.kind is param.KEYWORD_ONLY}
    return cls("what went wrong, and what to do", **keywords)


def looks(error: BaseException) -> tuple[Any, ...]:
    state = {**vars(error), **{k: v for k, v in LEFT_BEHIND.items() if k in vars(error)}}
    return type(error), error.args, str(error), state


def test_every_class_is_found() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"NsframeError", "APIError", "PartialWriteError", "ReadOnlyTableError",
            "TableNotFoundError"} <= names
    assert names == {n for n in exceptions.__all__ if n != "error_class_for"}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pickle_round_trip(cls: type[BaseException]) -> None:
    error = build(cls)
    again = pickle.loads(pickle.dumps(error))
    assert looks(again) == looks(error)
    assert looks(copy.copy(error)) == looks(error)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_raised_and_chained_error_pickles(cls: type[BaseException]) -> None:
    with pytest.raises(cls) as caught:
        try:
            raise OSError("the cause")
        except OSError as cause:
            raise build(cls) from cause
    again = pickle.loads(pickle.dumps(caught.value))
    assert looks(again) == looks(caught.value)


def test_api_error_keeps_what_the_server_said() -> None:
    error = exceptions.TableNotFoundError("no table", status=404, code=4,
                                          headers={"x-request-id": "r1"},
                                          url="POST http://h/v1/table/t/describe")
    again = pickle.loads(pickle.dumps(error))
    assert (again.status, again.code, again.detail, again.headers, again.url) == \
        (404, 4, "no table", {"x-request-id": "r1"}, "POST http://h/v1/table/t/describe")
    assert again.response is None
    assert again.to_body() == error.to_body()


def test_partial_write_error_keeps_its_counts() -> None:
    error = exceptions.PartialWriteError("chunk 3 failed", table="db$t", rows_committed=10,
                                         chunks_committed=2, version=4)
    again = pickle.loads(pickle.dumps(error))
    assert (again.table, again.rows_committed, again.chunks_committed, again.version) == \
        ("db$t", 10, 2, 4)
    assert str(again) == "chunk 3 failed"
