"""`GET`/`POST /v1/table/{id}/stats` (upstream GetTableStats, LanceDB's `Table.stats()`).

Every number is checked against something the server did not compute: the sizes of the
writes the test made, the files on disk, and the fragments as Lance reads them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import requests

from nsframe.server._storage.writes import DEFAULT_TARGET_ROWS
from tests.support import ARROW_HEADERS, assert_error, ipc_stream, table_location
from tests.support.querykit import create_table, insert, ok, post
from tests.support.stores import StoreView

PERCENTILES = (25, 50, 75, 99)


def ids(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": pa.array([f"c{i % 3}" for i in range(start, start + n)])})


def stats(http: requests.Session, base_url: str, table: str,
          branch: str | None = None) -> dict[str, Any]:
    """The POST answer, after checking that GET (LanceDB's method) answers the same."""
    body = {"branch": branch} if branch is not None else {}
    answer = ok(post(http, base_url, table, "stats", body))
    params = {"branch": branch} if branch is not None else {}
    assert ok(http.get(f"{base_url}/v1/table/{table}/stats", params=params)) == answer
    return answer


def expected_lengths(rows: list[int]) -> dict[str, int]:
    """LanceDB's summary of rows per fragment: nearest rank at index n * p // 100 of the
    sorted counts, mean rounded down."""
    rows = sorted(rows)
    n = len(rows)
    summary = {"min": rows[0], "max": rows[-1], "mean": sum(rows) // n}
    summary |= {f"p{p}": rows[n * p // 100] for p in PERCENTILES}
    return summary




def data_file_bytes(store: StoreView, location: str) -> int:
    """The stored size of the data files the latest version's fragments reference."""
    sizes = store.sizes(location, "data")
    return sum(sizes[f.path.rsplit("/", 1)[-1]] for fragment in
               store.dataset(location).get_fragments() for f in fragment.data_files())


def test_rows_fragments_and_lengths_follow_inserts_and_deletes(
        http: requests.Session, base_url: str, ns: str, store: StoreView) -> None:
    table = f"{ns}$t"
    sizes = [5, 1, 2, 3, 7, 11, 40, 4]  # one fragment per write
    create_table(http, base_url, table, ids(0, sizes[0]))
    start = sizes[0]
    for n in sizes[1:]:
        insert(http, base_url, table, ids(start, n))
        start += n
    got = stats(http, base_url, table)
    assert got["num_rows"] == sum(sizes) == 73 and got["num_indices"] == 0
    assert got["fragment_stats"] == {
        "num_fragments": 8, "num_small_fragments": 8,
        "lengths": {"min": 1, "max": 40, "mean": 9, "p25": 3, "p50": 5, "p75": 11, "p99": 40},
    }
    assert got["fragment_stats"]["lengths"] == expected_lengths(sizes)

    # A delete hides rows but leaves them in their fragments until compaction: the
    # lengths are physical rows, as in LanceDB and as compaction counts them.
    ok(post(http, base_url, table, "delete", {"predicate": "id % 2 = 0 AND id >= 30"}))
    got = stats(http, base_url, table)
    assert got["num_rows"] == 73 - 22 == ok(post(http, base_url, table, "count_rows"))
    assert got["fragment_stats"]["lengths"] == expected_lengths(sizes)
    # A fragment whose rows are all deleted is gone (ids 5..5, the one-row insert).
    ok(post(http, base_url, table, "delete", {"predicate": "id = 5"}))
    got = stats(http, base_url, table)
    assert got["num_rows"] == 50 and got["fragment_stats"]["num_fragments"] == 7
    remaining = [5, 2, 3, 7, 11, 40, 4]
    assert got["fragment_stats"]["lengths"] == expected_lengths(remaining)
    # The same, as Lance reads the fragments from disk.
    on_disk = store.dataset(table_location(http, base_url, f"{ns}$t"))
    assert sorted(f.metadata.physical_rows for f in on_disk.get_fragments()) == sorted(remaining)
    assert sum(f.count_rows() for f in on_disk.get_fragments()) == 50

    # Compaction (our optimize) rewrites the fragments into one without the deleted rows.
    ok(post(http, base_url, table, "optimize"))
    got = stats(http, base_url, table)
    assert got["num_rows"] == 50
    assert got["fragment_stats"] == {
        "num_fragments": 1, "num_small_fragments": 1,
        "lengths": {k: 50 for k in ("min", "max", "mean", "p25", "p50", "p75", "p99")},
    }


def test_small_means_below_the_optimize_target(http: requests.Session, base_url: str,
                                               ns: str) -> None:
    """A fragment is small when optimize's default target is not reached: the boundary."""
    table = f"{ns}$big"
    one_byte = pa.int8()
    create_table(http, base_url, table,
                 pa.table({"b": pa.nulls(DEFAULT_TARGET_ROWS, one_byte)}))
    insert(http, base_url, table, pa.table({"b": pa.nulls(DEFAULT_TARGET_ROWS - 1, one_byte)}))
    got = stats(http, base_url, table)["fragment_stats"]
    assert got["num_fragments"] == 2 and got["num_small_fragments"] == 1
    assert got["lengths"]["min"] == DEFAULT_TARGET_ROWS - 1
    assert got["lengths"]["max"] == DEFAULT_TARGET_ROWS


def test_total_bytes_is_the_size_of_the_data_files(http: requests.Session, base_url: str,
                                                   ns: str, store: StoreView) -> None:
    table = f"{ns}$bytes"
    create_table(http, base_url, table, ids(0, 100))
    first = stats(http, base_url, table)["total_bytes"]
    location = table_location(http, base_url, f"{ns}$bytes")
    files = store.sizes(location, "data")
    assert len(files) == 1 and first == next(iter(files.values())) > 0
    insert(http, base_url, table, ids(100, 1000))
    got = stats(http, base_url, table)["total_bytes"]
    every_file = sum(store.sizes(location, "data").values())
    assert got == every_file == data_file_bytes(store, location) > first
    # Deletion files are not data: the total stays until compaction rewrites the data.
    ok(post(http, base_url, table, "delete", {"predicate": "id < 50"}))
    assert stats(http, base_url, table)["total_bytes"] == got
    # After compaction only the new file is referenced; the old ones stay for old versions.
    ok(post(http, base_url, table, "optimize"))
    compacted = stats(http, base_url, table)["total_bytes"]
    assert compacted == data_file_bytes(store, location) != got
    assert len(store.sizes(location, "data")) == 3


def test_num_indices(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$idx"
    create_table(http, base_url, table, ids(0, 200))
    assert stats(http, base_url, table)["num_indices"] == 0
    ok(post(http, base_url, table, "create_scalar_index", {"column": "id",
                                                           "index_type": "BTREE"}))
    assert stats(http, base_url, table)["num_indices"] == 1
    ok(post(http, base_url, table, "create_index", {"column": "cat", "index_type": "BITMAP"}))
    assert stats(http, base_url, table)["num_indices"] == 2
    # Rebuilding an index keeps the count; dropping one lowers it.
    ok(post(http, base_url, table, "create_index", {"column": "cat", "index_type": "BITMAP"}))
    assert stats(http, base_url, table)["num_indices"] == 2
    ok(post(http, base_url, table, "index/cat_idx/drop"))
    got = stats(http, base_url, table)
    assert got["num_indices"] == 1 and got["num_rows"] == 200


def test_a_branch_has_its_own_stats(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$br"
    create_table(http, base_url, table, ids(0, 10))
    insert(http, base_url, table, ids(10, 20))
    main_before = stats(http, base_url, table)
    ok(post(http, base_url, table, "branches/create", {"name": "exp"}))
    assert stats(http, base_url, table, "exp") == main_before  # a branch starts as a copy
    ok(http.post(f"{base_url}/v1/table/{table}/insert", params={"branch": "exp"},
                 data=ipc_stream(ids(30, 3)), headers=ARROW_HEADERS))
    ok(post(http, base_url, table, "delete", {"predicate": "id < 4", "branch": "exp"}))
    ok(post(http, base_url, table, "create_scalar_index",
            {"column": "id", "index_type": "BTREE"}, branch="exp"))
    exp = stats(http, base_url, table, "exp")
    assert exp["num_rows"] == 29 and exp["num_indices"] == 1
    assert exp["fragment_stats"]["num_fragments"] == 3
    assert exp["fragment_stats"]["lengths"] == expected_lengths([10, 20, 3])
    assert exp["total_bytes"] > main_before["total_bytes"]
    # Main is untouched, whichever way it is named.
    assert stats(http, base_url, table) == main_before == stats(http, base_url, table, "main")
    assert main_before["num_rows"] == 30 and main_before["num_indices"] == 0
    assert main_before["fragment_stats"]["lengths"] == expected_lengths([10, 20])


def test_an_empty_table_is_all_zeros(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$empty"
    create_table(http, base_url, table, ids(0, 0))
    assert stats(http, base_url, table) == {
        "total_bytes": 0, "num_rows": 0, "num_indices": 0,
        "fragment_stats": {"num_fragments": 0, "num_small_fragments": 0,
                           "lengths": {k: 0 for k in ("min", "max", "mean", "p25", "p50",
                                                      "p75", "p99")}},
    }


def test_errors(http: requests.Session, base_url: str, ns: str) -> None:
    table = f"{ns}$t"
    create_table(http, base_url, table, ids(0, 3))
    url = f"{base_url}/v1/table/{table}/stats"
    assert_error(http.post(url, json={"branch": "nope"}), 404, 22)
    assert_error(http.get(url, params={"branch": "nope"}), 404, 22)
    assert_error(http.post(url, json={"branch": 5}), 400, 13)
    assert_error(http.post(url, json={"id": [ns, "other"]}), 400, 13)
    assert_error(http.post(url, data=b"{not json", headers={"Content-Type": "application/json"}),
                 400, 13)
    for missing, code in ((f"{ns}$ghost", 4), (f"{ns}x$t", 1)):
        assert_error(http.post(f"{base_url}/v1/table/{missing}/stats", json={}), 404, code)
        assert_error(http.get(f"{base_url}/v1/table/{missing}/stats"), 404, code)
    # A declared table has no data to describe yet, as for count_rows.
    ok(post(http, base_url, f"{ns}$declared", "declare"))
    assert_error(post(http, base_url, f"{ns}$declared", "stats"), 404, 4)
    # LanceDB's path, with its trailing slash, and the body id that matches.
    assert ok(http.get(url + "/")) == ok(http.post(url, json={"id": [ns, "t"]}))


def test_upstream_rest_client(http: requests.Session, base_url: str, ns: str) -> None:
    """pylance's RestNamespace validates the answer against upstream's strict schema."""
    from lance.namespace import RestNamespace
    from lance_namespace_urllib3_client.models import GetTableStatsRequest

    create_table(http, base_url, f"{ns}$up", ids(0, 6))
    insert(http, base_url, f"{ns}$up", ids(6, 3))
    rest = RestNamespace(uri=base_url)  # type: ignore[no-untyped-call]
    got = rest.get_table_stats(GetTableStatsRequest(id=[ns, "up"]))
    assert got.num_rows == 9 and got.num_indices == 0 and got.total_bytes > 0
    assert got.fragment_stats.num_fragments == 2
    assert got.fragment_stats.lengths.p50 == 6 and got.fragment_stats.lengths.mean == 4
