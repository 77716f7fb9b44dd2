"""A panic inside Lance answers the contract's 400, on a connection that stays open.

Lance's planner indexes arguments it has not checked, and pyo3 raises its panics as
``PanicException``, a BaseException: every ``except Exception`` let it through, so
uvicorn answered a plain-text "Internal Server Error" and closed the connection. A panic
in one of Lance's own threads came back as ``RuntimeError("Task was aborted")``, a 500.
All of these were found by a fuzz of random filters against a real ``nsframe serve``,
which is what this test runs them against.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
import requests

from tests.storage._servers import ServerProcess, serving_table
from tests.support import assert_error

TABLE = "p%24t"
# (route, body): a panic in the planner (the first two), then in Lance's threads.
PANICS = {
    "projection get_field()": ("query", {"columns": {"c": "get_field()"}, "k": 3}),
    "filter get_field(v) >> NULL": ("count_rows", {"predicate": "get_field(v) >> NULL"}),
    "filter decimal(76) cast": ("query", {"filter": "3 > v::DECIMAL(76, 0)", "k": 3}),
    "predicate decimal(76) cast": (
        "count_rows", {"predicate": "100 IS DISTINCT FROM CAST(tags AS DECIMAL(76, 0))"}),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    rows = pa.table({"id": [1, 2], "tags": [["a"], ["b"]],
                     "v": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32(), 2))})
    with serving_table(tmp_path_factory.mktemp("panics"), "p$t", rows) as one:
        yield one


@pytest.mark.parametrize(("route", "body"), PANICS.values(), ids=PANICS.keys())
def test_a_panic_in_lance_is_a_400_on_a_connection_that_stays_open(
        server: ServerProcess, route: str, body: dict[str, object]) -> None:
    with requests.Session() as session:
        answer = session.post(f"{server.url}/v1/table/{TABLE}/{route}", json=body, timeout=60)
        detail = assert_error(answer, 400, 13)["detail"]
        assert "Lance failed inside its engine on this request" in detail
        assert answer.headers.get("connection") != "close"
        # The same connection answers the next request: nothing was reset.
        after = session.post(f"{server.url}/v1/table/{TABLE}/count_rows", json={}, timeout=60)
        assert after.status_code == 200 and after.json() == 2
    assert "Exception in ASGI application" not in server.log_tail(1_000_000)


def test_the_panic_changes_nothing(server: ServerProcess) -> None:
    # A write whose condition panics: refused, and the table is as it was.
    answer = requests.post(f"{server.url}/v1/table/{TABLE}/delete",
                           json={"predicate": "3 > v::DECIMAL(76, 0)"}, timeout=60)
    assert "Lance failed inside its engine" in assert_error(answer, 400, 13)["detail"]
    count = requests.post(f"{server.url}/v1/table/{TABLE}/count_rows", json={}, timeout=60)
    assert count.json() == 2
