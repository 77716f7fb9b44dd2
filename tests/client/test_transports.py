"""One suite, every transport: the same workflow through `HTTPTransport` (the embedded
server's loopback socket) and `EmbeddedTransport` (its ASGI app in process), with the
same answers and the same errors; retries on 503 with Retry-After alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import nsframe
from nsframe import RetryConfig
from nsframe.exceptions import (
    APIError,
    InvalidInputError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from nsframe.transport import EmbeddedTransport, HTTPTransport, Transport
from tests.support import text_vector_rows

from .test_retry_config import Script, answer, client_for  # noqa: F401 - the fixture

TRANSPORTS = ("http", "embedded")


def _transport(kind: str) -> Transport | None:
    return HTTPTransport() if kind == "http" else None  # None: the embedded default


@pytest.fixture(params=TRANSPORTS)
def conn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[nsframe.Connection]:
    with nsframe.connect(tmp_path / "data", transport=_transport(request.param)) as conn:
        expected = HTTPTransport if request.param == "http" else EmbeddedTransport
        assert isinstance(conn.client.transport, expected)
        yield conn


def _streamed(n: int, start: int, batches: int) -> pa.RecordBatchReader:
    """A reader whose batches are made as they are sent: a chunked upload."""
    whole = text_vector_rows(n * batches, start)
    return pa.RecordBatchReader.from_batches(
        whole.schema, iter(whole.to_batches(max_chunksize=n)))


def workflow(conn: nsframe.Connection) -> dict[str, Any]:
    """Create, insert (whole and streamed), query, and the contract's errors; what each
    step answered."""
    seen: dict[str, Any] = {}
    conn.create_namespace("db")
    tbl = conn.create_table("db$t", text_vector_rows(100))
    seen["insert"] = tbl.insert(text_vector_rows(50, start=100)).num_rows
    seen["streamed"] = tbl.insert(_streamed(1000, 150, batches=5)).num_rows
    seen["count"] = tbl.count_rows()
    seen["filtered"] = tbl.count_rows("id >= 140")
    seen["read"] = tbl.to_arrow(filter="id < 10").sort_by("id")
    seen["search"] = tbl.search(np.zeros(8, dtype=np.float32)).limit(5).to_arrow()
    seen["tables"] = conn.namespace("db").table_names()
    for step, call in {
        "404": lambda: conn.table("db$missing").count_rows(),
        "400": lambda: tbl.search().where("no_such_column > 1").to_arrow(),
        "409": lambda: conn.create_table("db$t", text_vector_rows(1)),
    }.items():
        with pytest.raises(APIError) as info:
            call()
        err = info.value
        seen[step] = (type(err), err.status, err.code, err.detail, err.type, err.title)
    return seen


def test_the_workflow(conn: nsframe.Connection) -> None:
    seen = workflow(conn)
    assert seen["insert"] == 50 and seen["streamed"] == 5000
    assert seen["count"] == 5150 and seen["filtered"] == 5010
    assert seen["read"].column("id").to_pylist() == list(range(10))
    assert seen["search"].num_rows == 5 and "_distance" in seen["search"].column_names
    assert seen["tables"] == ["t"]
    assert seen["404"][:2] == (TableNotFoundError, 404)
    assert seen["400"][:2] == (InvalidInputError, 400)
    assert seen["409"][:2] == (TableAlreadyExistsError, 409)


def test_http_and_in_process_give_identical_answers_and_errors(tmp_path: Path) -> None:
    answers = []
    for kind in TRANSPORTS:
        with nsframe.connect(tmp_path / kind, transport=_transport(kind)) as conn:
            answers.append(workflow(conn))
    over_http, in_process = answers
    assert over_http.keys() == in_process.keys()
    for step in over_http:
        if step == "search":  # same rows and distances; the index is rebuilt per folder
            assert over_http[step].equals(in_process[step]), step
        else:
            assert over_http[step] == in_process[step], step


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_503_with_retry_after_is_retried_alike(kind: str, client_for: Any) -> None:  # noqa: F811
    script = Script([answer(503, retry_after="1"), answer(200)])
    assert client_for(kind, script).describe_namespace("db") == {"properties": {}}
    assert len(script.times) == 2 and 0.95 <= script.gaps[0] < 5
    script = Script([answer(503, retry_after="0")])
    with pytest.raises(ServiceUnavailableError, match="said 503"):
        client_for(kind, script, retry_config=RetryConfig(retries=2)).describe_namespace("db")
    assert len(script.times) == 3


def test_a_transport_of_ones_own(tmp_path: Path) -> None:
    class Counting:
        """Counts the calls, then hands them to the embedded transport."""

        def __init__(self, inner: Transport) -> None:
            self.inner = inner
            self.calls: list[str] = []

        def send(self, method: str, url: str, **options: Any) -> Any:
            self.calls.append(f"{method} {url.split('?')[0].rsplit('/', 1)[-1]}")
            return self.inner.send(method, url, **options)

        def close(self) -> None:
            self.inner.close()

    with nsframe.connect(tmp_path) as embedded:
        counting = Counting(embedded.client.transport)
        token = embedded.client.headers["Authorization"].split()[1]
        with nsframe.connect(embedded.url, token=token, transport=counting) as conn:
            conn.create_table("t", text_vector_rows(3))
            assert conn.table("t").count_rows() == 3
        assert counting.calls[-1] == "POST count_rows"
    with pytest.raises(TypeError, match="transport= takes"):
        nsframe.connect("http://127.0.0.1:9", transport="http")  # type: ignore[arg-type]


def _query(conn: nsframe.Connection, ident: str, body: dict[str, Any]) -> Any:
    return conn.client.request("POST", "/v1/table/{id}/query", ident, idempotent=True,
                               json=body, stream=True)


def test_in_process_a_small_result_comes_as_arrow_data(tmp_path: Path) -> None:
    data = text_vector_rows(100_000)  # ~6 MB: more than one plain body (4 MB) in all
    with nsframe.connect(tmp_path) as embedded:
        token = embedded.client.headers["Authorization"].split()[1]
        tbl = embedded.create_table("t", data)
        in_process = _query(embedded, "t", {"k": 10, "filter": "id >= 5"})
        assert in_process.arrow is not None and in_process.read() == b""
        assert in_process.headers["x-lancedb-version"] == str(tbl.version)
        with nsframe.connect(embedded.url, token=token) as remote:
            over_http = _query(remote, "t", {"k": 10, "filter": "id >= 5"})
            assert over_http.arrow is None and over_http.read()[:6] == b"ARROW1"
            probe = np.zeros(8, dtype=np.float32)
            for query in (lambda c: c.table("t").search(probe).limit(10),
                          lambda c: c.table("t").search().where("id % 7 = 0").limit(50)):
                assert query(embedded).to_arrow().equals(query(remote).to_arrow())
                assert query(embedded).to_pandas().equals(query(remote).to_pandas())
            # A large result still streams as IPC, read as it arrives.
            big = _query(embedded, "t", {"k": 0})
            assert big.arrow is None
            big.close()
            assert tbl.to_arrow().equals(remote.table("t").to_arrow())
        # Errors are the server's, before any data: a bad filter is still a 400.
        with pytest.raises(InvalidInputError, match="no_such_column"):
            tbl.search().where("no_such_column > 1").to_arrow()
