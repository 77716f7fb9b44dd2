"""Unique keys under concurrency: merge_inserts of one new key, at once, on several servers.

Lance commits with snapshot isolation: two merges that both insert id 7 add a fragment
each, touch no existing one, and so both commit. A table whose key column carries Lance's
``lance-schema:unenforced-primary-key`` field metadata lets Lance see the clash (the loser
retries as an update); a table without a declared key has its merges serialized across
the servers sharing the root; a merge on another column than the declared key is refused
(docs/server.md, "Primary keys").

Every race runs on two ``nsframe serve`` processes over one local folder, and again on
two over one ``s3://`` root (moto), clients spread over both servers.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import lancedb
import pyarrow as pa
import pytest
import requests

from tests.support.s3 import S3Endpoint

from ._rest import SCHEMA, Api, quoted, stream_bytes
from ._servers import ServerProcess, cluster, kept_running
from .test_multiprocess import race

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]

PK = "lance-schema:unenforced-primary-key"
ROUNDS = 10
WRITERS = 4


@pytest.fixture(scope="module")
def s3_pair(s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
            code_under_test: Path) -> Iterator[list[ServerProcess]]:
    with cluster(s3.new_root("keys"), 2, tmp_path_factory.mktemp("keys-logs"),
                 env=s3.env()) as started:
        yield started


@pytest.fixture(scope="module")
def ddb_pair(s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
             code_under_test: Path) -> Iterator[tuple[list[ServerProcess], str]]:
    """Two servers on an s3+ddb:// root (conditional creates through DynamoDB)."""
    table = f"commits-{uuid.uuid4().hex[:8]}"
    s3.create_commit_table(table)
    root = s3.new_root("keys-ddb").replace("s3://", "s3+ddb://", 1) + f"?ddbTableName={table}"
    with cluster(root, 2, tmp_path_factory.mktemp("keys-ddb-logs"), env=s3.env()) as started:
        yield started, table


@pytest.fixture(params=["local", "s3"])
def fleet(request: pytest.FixtureRequest) -> Iterator[list[ServerProcess]]:
    """Two servers over one root: a local folder (the session's pair), or an s3:// prefix."""
    if request.param == "local":
        yield request.getfixturevalue("servers")
    else:
        yield from kept_running(request.getfixturevalue("s3_pair"))


@pytest.fixture
def apis(fleet: list[ServerProcess], server_errors: list[str]) -> Iterator[list[Api]]:
    """One client per writer, spread over the servers; a fresh namespace for the test."""
    clients = [Api(fleet[n % len(fleet)], server_errors) for n in range(WRITERS)]
    yield clients
    for client in clients:
        client.close()


def fresh_table(api: Api) -> str:
    ns = f"k{uuid.uuid4().hex[:10]}"
    resp = api.create_namespace(ns)
    assert resp.status_code == 200, resp.text
    return f"{ns}$t"


def one_row(key: int, label: str, schema: pa.Schema = SCHEMA) -> bytes:
    return stream_bytes(pa.table({"id": [key], "label": [label]}, schema=schema))


def upsert(api: Api, table: str, body: bytes, on: str = "id") -> requests.Response:
    return api.upload(table, "merge_insert", body, on=on, when_matched_update_all="true",
                      when_not_matched_insert_all="true")


def labels_by_id(api: Api, table: str) -> dict[int, list[str]]:
    resp = api.table(table, "query", {"filter": "true",
                                      "columns": {"column_names": ["id", "label"]}})
    assert resp.status_code == 200, resp.text
    found: dict[int, list[str]] = {}
    for row in pa.ipc.open_file(pa.BufferReader(resp.content)).read_all().to_pylist():
        found.setdefault(row["id"], []).append(row["label"])
    return found


def race_new_keys(apis: list[Api], table: str, rounds: int = ROUNDS) -> list[str]:
    """``rounds`` times, every client upserts the same new id at once; what went wrong."""
    problems: list[str] = []
    for r in range(1, rounds + 1):
        answers = race([partial(upsert, api, table, one_row(r, f"w{n}"))
                        for n, api in enumerate(apis)])
        bad = [(a.status_code, a.text[:160]) for a in answers if a.status_code != 200]
        if bad:
            problems.append(f"round {r}: answers {bad}")
    held = labels_by_id(apis[-1], table)
    for r in range(1, rounds + 1):
        labels = held.get(r, [])
        if len(labels) != 1 or labels[0] not in {f"w{n}" for n in range(len(apis))}:
            problems.append(f"id {r}: {len(labels)} rows {labels}")
    return problems


def arrow_schema(api: Api, table: str) -> pa.Schema:
    encoded = api.describe(table)["arrow_schema"]
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))


# ------------------------------------------------------------------------- races
def test_merges_of_one_new_id_leave_one_row(apis: list[Api], server_errors: list[str]) -> None:
    """The defect as reported: a table with no declared key, four upserts of one new id
    at once, on two servers: one row (merges on such a table are serialized)."""
    table = fresh_table(apis[0])
    created = apis[0].create(table, one_row(0, "seed"))
    assert created.status_code == 200, created.text
    problems = race_new_keys(apis, table)
    assert problems + server_errors == [], "\n".join(problems + server_errors)


def test_merges_on_the_declared_key_leave_one_row(apis: list[Api],
                                                  server_errors: list[str]) -> None:
    """A key declared at create (``primary_key=id``): Lance's own check, one row per key."""
    table = fresh_table(apis[0])
    created = apis[0].upload(table, "create", one_row(0, "seed"), primary_key="id")
    assert created.status_code == 200, created.text
    schema = arrow_schema(apis[1], table)
    assert schema.field("id").metadata == {PK.encode(): b"true"}
    assert not schema.field("id").nullable  # a key has no nulls, as in SQL
    problems = race_new_keys(apis, table)
    assert problems + server_errors == [], "\n".join(problems + server_errors)


def test_key_declared_in_the_arrow_schema(apis: list[Api], server_errors: list[str]) -> None:
    """LanceDB's way: the client's Arrow schema carries the metadata (on a nullable
    field, as pyarrow fields are by default); an empty create declares the key too."""
    table = fresh_table(apis[0])
    keyed = pa.schema([pa.field("id", pa.int64(), metadata={PK: "true"}),
                       pa.field("label", pa.string())])
    empty = stream_bytes(keyed.empty_table())
    created = apis[0].upload(table, "create", empty)
    assert created.status_code == 200, created.text
    assert arrow_schema(apis[1], table).field("id").metadata == {PK.encode(): b"true"}
    problems = race_new_keys(apis, table, rounds=4)
    assert problems + server_errors == [], "\n".join(problems + server_errors)


def test_first_merges_into_a_declared_table_leave_one_row(apis: list[Api],
                                                          server_errors: list[str]) -> None:
    """A merge into a declared table creates it; the losers of that create merge into
    the winner's table rather than append to it."""
    problems: list[str] = []
    for r in range(3):
        table = fresh_table(apis[0])
        declared = apis[0].table(table, "declare", {})
        assert declared.status_code == 200, declared.text
        answers = race([partial(upsert, api, table, one_row(7, f"w{n}"))
                        for n, api in enumerate(apis)])
        statuses = [a.status_code for a in answers]
        held = labels_by_id(apis[-1], table)
        if statuses != [200] * WRITERS or len(held.get(7, [])) != 1:
            problems.append(f"round {r}: answers {statuses}, rows of id 7: {held.get(7)}")
    assert problems + server_errors == [], "\n".join(problems + server_errors)


def test_merge_on_another_column_than_the_key_is_refused(
        apis: list[Api], server_errors: list[str]) -> None:
    """With id declared, a merge on label could insert a second row of an id: refused
    (400, naming the key), at once on both servers, and nothing is written."""
    table = fresh_table(apis[0])
    created = apis[0].upload(table, "create", one_row(0, "seed"), primary_key="id")
    assert created.status_code == 200, created.text
    answers = race([partial(upsert, api, table, one_row(5, "same"), on="label")
                    for api in apis])
    for answer in answers:
        assert answer.status_code == 400, answer.text
        detail = answer.json()["detail"]
        assert "primary key" in detail and "'id'" in detail and "on=id" in detail, detail
    assert labels_by_id(apis[0], table) == {0: ["seed"]}
    assert server_errors == []


def test_merge_on_a_keyless_table_by_any_column_is_serialized(
        apis: list[Api], server_errors: list[str]) -> None:
    """No key declared: a merge on label is serialized like one on id, one row."""
    table = fresh_table(apis[0])
    assert apis[0].create(table, one_row(0, "seed")).status_code == 200
    answers = race([partial(upsert, api, table, one_row(9, "x"), on="label") for api in apis])
    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    assert labels_by_id(apis[0], table) == {0: ["seed"], 9: ["x"]}
    assert server_errors == []


def test_bad_primary_keys_are_400s(apis: list[Api], server_errors: list[str]) -> None:
    table = fresh_table(apis[0])
    unknown = apis[0].upload(table, "create", one_row(0, "a"), primary_key="nope")
    assert unknown.status_code == 400, unknown.text
    assert "'nope'" in unknown.json()["detail"], unknown.text
    nulls = stream_bytes(pa.table({"id": [1, None], "label": ["a", "b"]},
                                  schema=pa.schema([("id", pa.int64()), ("label", pa.string())])))
    with_nulls = apis[0].upload(table, "create", nulls, primary_key="id")
    assert with_nulls.status_code == 400, with_nulls.text
    assert "null" in with_nulls.json()["detail"], with_nulls.text
    assert apis[0].status(table) == 404  # nothing was created
    created = apis[0].upload(table, "create", one_row(0, "a"), primary_key="id")
    assert created.status_code == 200, created.text
    appended = apis[1].upload(table, "insert", nulls, mode="append")
    assert appended.status_code == 400, appended.text
    assert "null" in appended.json()["detail"], appended.text
    assert server_errors == []


# ---------------------------------------------------------------- LanceDB's SDK
def test_lancedb_remote_client_merges_on_its_key(fleet: list[ServerProcess]) -> None:
    """LanceDB's remote client (``db://``), one connection per server: a table created
    from a pyarrow schema carrying the key metadata, then upserts of one new id at once."""
    dbs = [lancedb.connect("db://nsframe", api_key="key", host_override=s.url)
           for s in fleet]
    name = f"lk_{uuid.uuid4().hex[:8]}"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={PK: "true"}),
                        pa.field("label", pa.string())])
    dbs[0].create_table(name, schema=schema)
    tables = [dbs[n % len(dbs)].open_table(name) for n in range(WRITERS)]
    assert tables[1].schema.field("id").metadata == {PK.encode(): b"true"}

    upsert_race(tables, schema)
    held = tables[0].search().limit(100).to_arrow().column("id").to_pylist()
    assert sorted(held) == [1, 2, 3, 4]


def upsert_race(tables: list[Any], schema: pa.Schema) -> None:
    """Ids 1-4, each upserted by every LanceDB table handle at once."""
    def merge(n: int, key: int) -> Any:
        return (tables[n].merge_insert("id").when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(pa.table({"id": [key], "label": [f"w{n}"]}, schema=schema)))

    for key in range(1, 5):
        race([partial(merge, n, key) for n in range(len(tables))])


def test_lancedb_namespace_connection_merges_on_its_key(servers: list[ServerProcess]) -> None:
    """LanceDB's namespace connection writes the dataset itself where the server says,
    from the pyarrow schema it was given: the key is in it, and its concurrent merges
    (Lance's own, in this process) leave one row per key."""
    dbs = [lancedb.connect_namespace("rest", {"uri": s.url}) for s in servers]
    ns = f"ln{uuid.uuid4().hex[:8]}"
    with Api(servers[0]) as api:
        assert api.create_namespace(ns).status_code == 200
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={PK: "true"}),
                        pa.field("label", pa.string())])
    dbs[0].create_table("t", schema=schema, namespace_path=[ns])
    tables = [dbs[n % len(dbs)].open_table("t", namespace_path=[ns]) for n in range(WRITERS)]
    assert tables[1].schema.field("id").metadata == {PK.encode(): b"true"}

    upsert_race(tables, schema)
    held = dbs[1].open_table("t", namespace_path=[ns]).to_arrow().column("id").to_pylist()
    assert sorted(held) == [1, 2, 3, 4]


def test_keys_survive_quoting(apis: list[Api]) -> None:
    """A key column whose name needs quoting is declared and merged on like any other."""
    table = fresh_table(apis[0])
    schema = pa.schema([pa.field("my id", pa.int64()), pa.field("label", pa.string())])
    body = stream_bytes(pa.table({"my id": [1], "label": ["a"]}, schema=schema))
    created = apis[0].upload(table, "create", body, primary_key="`my id`")
    assert created.status_code == 200, created.text
    merged = apis[1].post(f"/v1/table/{quoted(table)}/merge_insert", data=body,
                          params={"on": "`my id`", "when_matched_update_all": "true"},
                          headers={"Content-Type": "application/vnd.apache.arrow.stream"})
    assert merged.status_code == 200, merged.text
    assert merged.json()["num_updated_rows"] == 1


def turns_folder(server: ServerProcess, api: Api, table: str) -> Path:
    """Where the merges into ``table`` (a local root) take their turns."""
    location = Path(api.describe(table)["location"].removeprefix("file://"))
    key = location.relative_to(Path(server.root).resolve()).as_posix()
    return Path(server.root, "_nsframe", "turns", quote(f"{key}@", safe=""))


def test_merges_that_only_update_take_no_turn(servers: list[ServerProcess],
                                              server_errors: list[str]) -> None:
    """Only inserts can repeat a key: a merge that only updates runs at once (concurrent
    updates of one row conflict in Lance's commit), and still changes each row once."""
    apis = [Api(servers[n % len(servers)], server_errors) for n in range(WRITERS)]
    table = fresh_table(apis[0])
    assert apis[0].create(table, one_row(1, "seed")).status_code == 200
    answers = race([partial(api.upload, table, "merge_insert", one_row(1, f"w{n}"), on="id",
                            when_matched_update_all="true") for n, api in enumerate(apis)])
    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    assert [a.json()["num_updated_rows"] for a in answers] == [1] * WRITERS
    labels = labels_by_id(apis[0], table)
    assert list(labels) == [1] and len(labels[1]) == 1 and labels[1][0] != "seed"
    assert not turns_folder(servers[0], apis[0], table).exists()
    assert server_errors == []


def test_a_turn_left_by_a_server_that_is_gone_is_taken_over(
        servers: list[ServerProcess], server_errors: list[str]) -> None:
    """A server that died during a merge leaves its turn in the store: the next merge,
    on any server, sees that its lease is gone and takes the next turn (no 503)."""
    with Api(servers[0], server_errors) as api:
        table = fresh_table(api)
        assert api.create(table, one_row(0, "seed")).status_code == 200
        folder = turns_folder(servers[0], api, table)
        folder.mkdir(parents=True, exist_ok=True)
        # The newest turn, in progress, of a server with no lease record.
        (folder / f"{10**6:020d}.turn").write_text('{"server": "gone", "request": "r"}')
        for n, server in enumerate(servers):
            with Api(server, server_errors) as other:
                merged = upsert(other, table, one_row(n + 1, "x"))
                assert merged.status_code == 200, merged.text
        assert sorted(labels_by_id(api, table)) == [0, 1, 2]
        turns = sorted(p.name for p in folder.iterdir())
        assert f"{10**6:020d}.done" in turns or f"{10**6:020d}.turn" not in turns, turns
    assert server_errors == []


def test_merges_on_an_s3_ddb_root_leave_one_row_and_no_claims_behind(
        ddb_pair: tuple[list[ServerProcess], str], s3: S3Endpoint) -> None:
    """On an s3+ddb:// root, turns are claimed in DynamoDB: the races end with one row
    per id, and the claims of finished turns are released, not kept one per merge."""
    servers, commit_table = ddb_pair
    server_errors: list[str] = []
    apis = [Api(servers[n % len(servers)], server_errors) for n in range(WRITERS)]
    keyless = fresh_table(apis[0])
    assert apis[0].create(keyless, one_row(0, "seed")).status_code == 200
    keyed = fresh_table(apis[0])
    created = apis[0].upload(keyed, "create", one_row(0, "seed"), primary_key="id")
    assert created.status_code == 200, created.text
    problems = race_new_keys(apis, keyless, rounds=4) + race_new_keys(apis, keyed, rounds=4)
    assert problems + server_errors == [], "\n".join(problems + server_errors)
    items = s3.client("dynamodb").scan(TableName=commit_table)["Items"]
    turns = [i["base_uri"]["S"] for i in items if "/_nsframe/turns/" in i["base_uri"]["S"]]
    assert len(turns) <= 2, turns  # the newest turn (and its end), of 16 merges
