"""`optimize`: compaction of small fragments, index refresh, and what stays as it was."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream, read_ipc_file

DIM = 8


def _rows(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    flat = rng.standard_normal(n * DIM).astype(np.float32)
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat), DIM),
    })


def _post(http: requests.Session, url: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = http.post(url, json=body)
    assert resp.status_code == 200, resp.text
    result: dict[str, Any] = resp.json()
    return result


def _many_small_inserts(http: requests.Session, base_url: str, table: str) -> None:
    create = http.post(f"{base_url}/v1/table/{table}/create", data=ipc_stream(_rows(0, 50)),
                       headers=ARROW_HEADERS)
    assert create.status_code == 200, create.text
    for i in range(1, 12):
        resp = http.post(f"{base_url}/v1/table/{table}/insert", data=ipc_stream(_rows(i * 50, 50)),
                         headers=ARROW_HEADERS)
        assert resp.status_code == 200, resp.text


def _ids(http: requests.Session, base_url: str, table: str, **body: Any) -> list[int]:
    resp = http.post(f"{base_url}/v1/table/{table}/query", json={"filter": "true", **body})
    assert resp.status_code == 200, resp.text
    return sorted(read_ipc_file(resp.content).column("id").to_pylist())


def test_optimize_compacts_fragments_and_keeps_every_row(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$frag"
    _many_small_inserts(http, base_url, t)
    before = _post(http, f"{base_url}/v1/table/{t}/describe", {})
    assert before["stats"]["num_fragments"] == 12
    ids_before = _ids(http, base_url, t)

    result = _post(http, f"{base_url}/v1/table/{t}/optimize", {})
    assert result["previous_version"] == before["version"]
    assert result["version"] > before["version"]
    assert result["fragments_removed"] == 12 and result["fragments_added"] == 1

    after = _post(http, f"{base_url}/v1/table/{t}/describe", {})
    assert after["stats"]["num_fragments"] == 1
    assert after["version"] == result["version"]
    assert _ids(http, base_url, t) == ids_before == list(range(600))
    # History is untouched: the version before compaction reads the same rows.
    assert _ids(http, base_url, t, version=before["version"]) == ids_before
    txn = _post(http, f"{base_url}/v1/transaction/{result['transaction_id']}/describe", {})
    assert txn["status"] == "Succeeded"


def test_optimize_brings_rows_appended_after_an_index_into_it(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$idx"
    create = http.post(f"{base_url}/v1/table/{t}/create", data=ipc_stream(_rows(0, 512)),
                       headers=ARROW_HEADERS)
    assert create.status_code == 200, create.text
    _post(http, f"{base_url}/v1/table/{t}/create_index",
          {"column": "vector", "index_type": "IVF_FLAT", "num_partitions": 2, "name": "vi"})
    late = _rows(10_000, 64)
    assert http.post(f"{base_url}/v1/table/{t}/insert", data=ipc_stream(late),
                     headers=ARROW_HEADERS).status_code == 200
    stats = _post(http, f"{base_url}/v1/table/{t}/index/vi/stats", {})
    assert stats["num_unindexed_rows"] == 64

    _post(http, f"{base_url}/v1/table/{t}/optimize", {})
    stats = _post(http, f"{base_url}/v1/table/{t}/index/vi/stats", {})
    assert stats["num_unindexed_rows"] == 0
    # A late row is found by the index alone (fast_search skips unindexed data).
    probe = late.column("vector")[3].as_py()
    resp = http.post(f"{base_url}/v1/table/{t}/query", json={
        "vector": {"single_vector": probe}, "k": 1, "fast_search": True, "nprobes": 2})
    assert read_ipc_file(resp.content).column("id").to_pylist() == [10_003]


def test_optimize_without_indices_leaves_them_stale(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$noidx"
    assert http.post(f"{base_url}/v1/table/{t}/create",
                     data=ipc_stream(_rows(0, 256)), headers=ARROW_HEADERS).status_code == 200
    _post(http, f"{base_url}/v1/table/{t}/create_scalar_index",
          {"column": "id", "index_type": "BTREE", "name": "by_id"})
    assert http.post(f"{base_url}/v1/table/{t}/insert",
                     data=ipc_stream(_rows(256, 10)), headers=ARROW_HEADERS).status_code == 200
    _post(http, f"{base_url}/v1/table/{t}/optimize", {"optimize_indices": False})
    stats = _post(http, f"{base_url}/v1/table/{t}/index/by_id/stats", {})
    assert stats["num_unindexed_rows"] == 10


@pytest.mark.parametrize(("body", "status", "code"), [
    pytest.param({"target_rows_per_fragment": 0}, 400, 13, id="zero-target"),
    pytest.param({"target_rows_per_fragment": "big"}, 400, 13, id="string-target"),
    pytest.param({"optimize_indices": "yes"}, 400, 13, id="string-flag"),
    pytest.param({"branch": "nope"}, 404, 22, id="missing-branch"),
])
def test_bad_optimize_requests(http: requests.Session, base_url: str, ns: str,
                               body: dict[str, Any], status: int, code: int) -> None:
    t = f"{ns}$bad"
    _many_small_inserts(http, base_url, t)
    version = _post(http, f"{base_url}/v1/table/{t}/describe", {})["version"]
    assert_error(http.post(f"{base_url}/v1/table/{t}/optimize", json=body), status, code)
    assert _post(http, f"{base_url}/v1/table/{t}/describe", {})["version"] == version


def test_optimize_a_missing_table_is_404(http: requests.Session, base_url: str, ns: str) -> None:
    assert_error(http.post(f"{base_url}/v1/table/{ns}$none/optimize", json={}), 404, 4)
