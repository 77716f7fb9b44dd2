"""The same raw requests to pylance's reference server and to ours, where both should agree.

Cases from the upstream conformance questions a request can raise twice: a merge_insert
or a register that is invalid *and* names a namespace or table that does not exist. The
reference answers the missing one (404); so do we. Also Lance's own REST suite's register
test, run with pylance's `RestNamespace` against our server.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import lance.namespace
import pyarrow as pa
import pytest
import requests
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    RegisterTableRequest,
    TableExistsRequest,
    connect,
)

from nsframe.server import serve_in_thread
from tests.support import ipc_stream

pytestmark = pytest.mark.upstream

JSON = {"Content-Type": "application/json"}
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}
ROWS = ipc_stream(pa.table({"id": pa.array([1], pa.int64())}))

# (name, path, query, headers, body): the namespace `ws` exists, `nowhere` does not.
CASES = [
    ("merge_insert into a missing namespace, no key", "/v1/table/nowhere$t/merge_insert",
     {}, ARROW, ROWS),
    ("merge_insert into a missing table, no key", "/v1/table/ws$ghost/merge_insert",
     {}, ARROW, ROWS),
    ("merge_insert into a missing table, nothing to do", "/v1/table/ws$ghost/merge_insert",
     {"on": "id"}, ARROW, ROWS),
    ("merge_insert into a missing table", "/v1/table/ws$ghost/merge_insert",
     {"on": "id", "when_not_matched_insert_all": "true"}, ARROW, ROWS),
    ("register into a missing namespace, empty location", "/v1/table/nowhere$t/register",
     {}, JSON, b'{"location": ""}'),
    ("register into a missing namespace", "/v1/table/nowhere$t/register",
     {}, JSON, b'{"location": "somewhere.lance"}'),
]


def _answers(url: str) -> dict[str, int]:
    assert requests.post(f"{url}/v1/namespace/ws/create", json={}).status_code in (200, 201)
    return {name: requests.post(url + path, params=query, headers=headers,
                                data=body).status_code
            for name, path, query, headers, body in CASES}


@pytest.fixture(scope="module")
def reference() -> dict[str, int]:
    with tempfile.TemporaryDirectory() as root, \
            lance.namespace.RestAdapter("dir", {"root": root}, port=0) as adapter:
        return _answers(f"http://127.0.0.1:{adapter.port}")


@pytest.fixture(scope="module")
def ours() -> dict[str, int]:
    with tempfile.TemporaryDirectory() as root, serve_in_thread(root) as running:
        return _answers(running.url)


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_invalid_requests_on_missing_targets_answer_as_the_reference(
        case: str, reference: dict[str, int], ours: dict[str, int]) -> None:
    assert ours[case] == reference[case] == 404


@pytest.fixture
def rest_namespace() -> Iterator[object]:
    with tempfile.TemporaryDirectory() as root, serve_in_thread(root) as running:
        yield connect("rest", {"uri": running.url})


def test_lance_rest_suite_register_gets_its_relative_location_back(
        rest_namespace: object) -> None:
    """Lance's test_register_table, step for step: deregister a table, register its
    folder again under another name by the last segment of its location, and expect
    that relative location back."""
    ns: object = rest_namespace
    ns.create_namespace(CreateNamespaceRequest(id=["workspace"]))  # type: ignore[attr-defined]
    ns.create_table(  # type: ignore[attr-defined]
        CreateTableRequest(id=["workspace", "physical_table"]),
        ipc_stream(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})))
    gone = ns.deregister_table(  # type: ignore[attr-defined]
        DeregisterTableRequest(id=["workspace", "physical_table"]))
    relative = gone.location.split("/")[-1] if "/" in gone.location else gone.location
    answer = ns.register_table(  # type: ignore[attr-defined]
        RegisterTableRequest(id=["workspace", "registered_table"], location=relative))
    assert answer.location == relative
    ns.table_exists(TableExistsRequest(id=["workspace", "registered_table"]))  # type: ignore[attr-defined]
    described = ns.describe_table(  # type: ignore[attr-defined]
        DescribeTableRequest(id=["workspace", "registered_table"]))
    assert described is not None
