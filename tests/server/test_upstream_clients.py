"""Upstream's own clients against our server.

Two clients that users of the Lance ecosystem already have:
- the OpenAPI-generated `lance_namespace_urllib3_client` (PyPI `lance-namespace-urllib3-client`),
- pylance's `lance.namespace.RestNamespace` (Rust, sends `?delimiter=` on every call and GET
  for `count_rows`).

Each one creates namespaces and tables, inserts, counts, drops, and reads the Lance error
code (`code` in our error body) of failed calls. Nothing here is mocked. Both clients take
the same request models: `lance_namespace` re-exports the generated ones.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import requests
from lance.namespace import RestNamespace
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeleteFromTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    TableExistsRequest,
)
from lance_namespace import errors as ns_errors
from lance_namespace_urllib3_client.api.namespace_api import NamespaceApi
from lance_namespace_urllib3_client.api.table_api import TableApi
from lance_namespace_urllib3_client.api_client import ApiClient
from lance_namespace_urllib3_client.configuration import Configuration
from lance_namespace_urllib3_client.exceptions import (
    ApiException,
    BadRequestException,
    ConflictException,
    NotFoundException,
)

from tests.support import ipc_stream

pytestmark = pytest.mark.upstream

SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])


def rows(ids: list[int]) -> bytes:
    return ipc_stream({"id": ids, "text": [f"row {i}" for i in ids]}, schema=SCHEMA)


def fresh_name() -> str:
    return f"u{uuid.uuid4().hex[:12]}"


def error_code(exc: ApiException) -> int:
    """The Lance error code the generated client read from our error body."""
    code_from_model = exc.data.code if exc.data is not None else None
    code_from_body = json.loads(exc.body)["code"] if exc.body else None
    assert code_from_model == code_from_body, (code_from_model, code_from_body)
    assert isinstance(code_from_model, int)
    return code_from_model


# ------------------------------------------------------------------ generated client
@pytest.fixture(scope="module")
def generated(base_url: str) -> Iterator[ApiClient]:
    with ApiClient(Configuration(host=base_url)) as client:
        yield client


@pytest.fixture
def namespaces(generated: ApiClient) -> NamespaceApi:
    return NamespaceApi(generated)


@pytest.fixture
def tables(generated: ApiClient) -> TableApi:
    return TableApi(generated)


def test_generated_client_full_round_trip(namespaces: NamespaceApi, tables: TableApi) -> None:
    name = fresh_name()
    created = namespaces.create_namespace(
        name, CreateNamespaceRequest(properties={"owner": "tests"})
    )
    assert created.properties == {"owner": "tests"}
    described = namespaces.describe_namespace(name, DescribeNamespaceRequest())
    assert described.properties == {"owner": "tests"}
    namespaces.namespace_exists(name, NamespaceExistsRequest())

    table_id = f"{name}$docs"
    made = tables.create_table(table_id, rows([1, 2, 3]))
    assert made.version == 1
    inserted = tables.insert_into_table(table_id, rows([4, 5]))
    assert inserted.num_inserted_rows == 2
    assert inserted.version == 2
    # Our count_rows answers a bare integer, which is what this client deserialises.
    assert tables.count_table_rows(table_id, CountTableRowsRequest()) == 5
    assert tables.count_table_rows(table_id, CountTableRowsRequest(predicate="id > 3")) == 2

    info = tables.describe_table(table_id, DescribeTableRequest())
    assert info.version == 2
    assert info.is_only_declared is False
    assert info.var_schema is not None
    assert [(f.name, f.type.type) for f in info.var_schema.fields] == [
        ("id", "int64"), ("text", "utf8")
    ]
    assert namespaces.list_tables(name).tables == ["docs"]

    replaced = tables.insert_into_table(table_id, rows([9]), mode="Overwrite")
    assert replaced.num_inserted_rows == 1
    assert tables.count_table_rows(table_id, CountTableRowsRequest()) == 1
    deleted = tables.delete_from_table(table_id, DeleteFromTableRequest(predicate="id = 9"))
    assert replaced.version is not None
    assert deleted.version == replaced.version + 1
    assert tables.count_table_rows(table_id, CountTableRowsRequest()) == 0

    dropped = tables.drop_table(table_id)
    assert dropped.id == [name, "docs"]
    with pytest.raises(NotFoundException) as missing_table:
        tables.table_exists(table_id, TableExistsRequest())
    assert error_code(missing_table.value) == ns_errors.ErrorCode.TABLE_NOT_FOUND

    namespaces.drop_namespace(name, DropNamespaceRequest())
    with pytest.raises(NotFoundException) as missing_ns:
        namespaces.namespace_exists(name, NamespaceExistsRequest())
    assert error_code(missing_ns.value) == ns_errors.ErrorCode.NAMESPACE_NOT_FOUND


def test_generated_client_reads_error_codes(namespaces: NamespaceApi, tables: TableApi) -> None:
    name = fresh_name()
    namespaces.create_namespace(name, CreateNamespaceRequest())
    tables.create_table(f"{name}$t", rows([1, 2]))

    with pytest.raises(ConflictException) as exists:
        namespaces.create_namespace(name, CreateNamespaceRequest())
    assert exists.value.status == 409
    assert error_code(exists.value) == ns_errors.ErrorCode.NAMESPACE_ALREADY_EXISTS

    with pytest.raises(NotFoundException) as missing:
        tables.describe_table(f"{name}$nope", DescribeTableRequest())
    assert error_code(missing.value) == ns_errors.ErrorCode.TABLE_NOT_FOUND
    assert "nope" in json.loads(missing.value.body or "{}")["detail"]

    with pytest.raises(ConflictException) as not_empty:
        namespaces.drop_namespace(name, DropNamespaceRequest(behavior="Restrict"))
    assert error_code(not_empty.value) == ns_errors.ErrorCode.NAMESPACE_NOT_EMPTY

    wrong = ipc_stream({"id": ["not a number"]})
    with pytest.raises(BadRequestException) as bad_schema:
        tables.insert_into_table(f"{name}$t", wrong)
    assert error_code(bad_schema.value) == ns_errors.ErrorCode.TABLE_SCHEMA_VALIDATION_ERROR
    # The failed insert and the refused drop changed nothing.
    assert tables.count_table_rows(f"{name}$t", CountTableRowsRequest()) == 2

    # spec/SEED_SPEC.md: dropping a missing namespace with mode Fail is a 400 (not upstream's 404).
    with pytest.raises(BadRequestException) as fail_missing:
        namespaces.drop_namespace(f"{name}$gone", DropNamespaceRequest(mode="Fail"))
    assert error_code(fail_missing.value) == ns_errors.ErrorCode.NAMESPACE_NOT_FOUND
    # ...and with mode Skip a 204 with no body, which this client returns as None.
    assert namespaces.drop_namespace(f"{name}$gone", DropNamespaceRequest(mode="Skip")) is None

    dropped = namespaces.drop_namespace(name, DropNamespaceRequest(behavior="Cascade"))
    assert dropped.properties == {}
    with pytest.raises(NotFoundException):
        namespaces.namespace_exists(name, NamespaceExistsRequest())


def test_generated_client_with_its_own_delimiter(
    namespaces: NamespaceApi, tables: TableApi
) -> None:
    parent = fresh_name()
    namespaces.create_namespace(parent, CreateNamespaceRequest(), delimiter=".")
    namespaces.create_namespace(f"{parent}.child", CreateNamespaceRequest(), delimiter=".")
    assert namespaces.list_namespaces(parent, delimiter=".").namespaces == ["child"]
    tables.create_table(f"{parent}.child.t", rows([7, 8, 9]), delimiter=".")
    counted = tables.count_table_rows(
        f"{parent}.child.t", CountTableRowsRequest(predicate="id >= 8"), delimiter="."
    )
    assert counted == 2
    # The same table under the default delimiter.
    assert tables.count_table_rows(f"{parent}$child$t", CountTableRowsRequest()) == 3
    namespaces.drop_namespace(parent, DropNamespaceRequest(behavior="cascade"), delimiter=".")
    assert parent not in namespaces.list_namespaces("$").namespaces


# ------------------------------------------------------------------ pylance RestNamespace
@pytest.fixture(scope="module")
def rest(base_url: str) -> RestNamespace:
    return RestNamespace(uri=base_url)  # type: ignore[no-untyped-call]


def test_rest_namespace_full_round_trip(rest: RestNamespace) -> None:
    name = fresh_name()
    created = rest.create_namespace(CreateNamespaceRequest(id=[name], properties={"k": "v"}))
    assert created.properties == {"k": "v"}
    rest.create_namespace(CreateNamespaceRequest(id=[name, "inner"]))
    assert rest.describe_namespace(DescribeNamespaceRequest(id=[name])).properties == {"k": "v"}
    listed = rest.list_namespaces(ListNamespacesRequest(id=[name]))
    assert listed.namespaces == ["inner"]

    table = [name, "inner", "docs"]
    made = rest.create_table(CreateTableRequest(id=table), rows([1, 2, 3]))
    assert made.version == 1
    inserted = rest.insert_into_table(InsertIntoTableRequest(id=table), rows([4, 5, 6, 7]))
    assert (inserted.num_inserted_rows, inserted.version) == (4, 2)
    # RestNamespace counts with GET and reads a bare integer.
    assert rest.count_table_rows(CountTableRowsRequest(id=table)).count == 7
    assert rest.count_table_rows(CountTableRowsRequest(id=table, predicate="id <= 2")).count == 2

    info = rest.describe_table(DescribeTableRequest(id=table))
    assert info.version == 2
    assert info.is_only_declared is False
    assert info.var_schema is not None
    assert [(f.name, f.type.type) for f in info.var_schema.fields] == [
        ("id", "int64"), ("text", "utf8")
    ]
    rest.table_exists(TableExistsRequest(id=table))
    assert rest.list_tables(ListTablesRequest(id=[name, "inner"])).tables == ["docs"]

    overwritten = rest.insert_into_table(
        InsertIntoTableRequest(id=table, mode="overwrite"), rows([100])
    )
    assert overwritten.num_inserted_rows == 1
    rest.delete_from_table(DeleteFromTableRequest(id=table, predicate="id = 100"))
    assert rest.count_table_rows(CountTableRowsRequest(id=table)).count == 0

    assert rest.drop_table(DropTableRequest(id=table)).id == table
    with pytest.raises(ns_errors.TableNotFoundError) as gone:
        rest.table_exists(TableExistsRequest(id=table))
    assert gone.value.code == ns_errors.ErrorCode.TABLE_NOT_FOUND

    rest.drop_namespace(DropNamespaceRequest(id=[name, "inner"]))
    rest.drop_namespace(DropNamespaceRequest(id=[name]))
    with pytest.raises(ns_errors.NamespaceNotFoundError) as ns_gone:
        rest.namespace_exists(NamespaceExistsRequest(id=[name]))
    assert ns_gone.value.code == ns_errors.ErrorCode.NAMESPACE_NOT_FOUND


def test_rest_namespace_declared_table_is_created_by_insert(rest: RestNamespace) -> None:
    name = fresh_name()
    rest.create_namespace(CreateNamespaceRequest(id=[name]))
    table = [name, "later"]
    rest.declare_table(DeclareTableRequest(id=table))
    declared = rest.describe_table(DescribeTableRequest(id=table))
    assert declared.is_only_declared is True
    assert declared.version is None

    inserted = rest.insert_into_table(InsertIntoTableRequest(id=table), rows([1, 2]))
    assert inserted.num_inserted_rows == 2
    created = rest.describe_table(DescribeTableRequest(id=table))
    assert created.is_only_declared is False
    assert rest.count_table_rows(CountTableRowsRequest(id=table)).count == 2
    rest.drop_namespace(DropNamespaceRequest(id=[name], behavior="Cascade"))


def test_rest_namespace_reads_error_codes(rest: RestNamespace) -> None:
    name = fresh_name()
    rest.create_namespace(CreateNamespaceRequest(id=[name]))
    table = [name, "t"]
    rest.create_table(CreateTableRequest(id=table), rows([1, 2, 3]))

    cases: list[tuple[type[ns_errors.LanceNamespaceError], ns_errors.ErrorCode, Any]] = [
        (ns_errors.NamespaceAlreadyExistsError, ns_errors.ErrorCode.NAMESPACE_ALREADY_EXISTS,
         lambda: rest.create_namespace(CreateNamespaceRequest(id=[name]))),
        (ns_errors.TableAlreadyExistsError, ns_errors.ErrorCode.TABLE_ALREADY_EXISTS,
         lambda: rest.create_table(CreateTableRequest(id=table), rows([9]))),
        (ns_errors.TableNotFoundError, ns_errors.ErrorCode.TABLE_NOT_FOUND,
         lambda: rest.describe_table(DescribeTableRequest(id=[name, "missing"]))),
        (ns_errors.NamespaceNotFoundError, ns_errors.ErrorCode.NAMESPACE_NOT_FOUND,
         lambda: rest.list_tables(ListTablesRequest(id=[fresh_name()]))),
        (ns_errors.NamespaceNotEmptyError, ns_errors.ErrorCode.NAMESPACE_NOT_EMPTY,
         lambda: rest.drop_namespace(DropNamespaceRequest(id=[name]))),
        (ns_errors.TableSchemaValidationError, ns_errors.ErrorCode.TABLE_SCHEMA_VALIDATION_ERROR,
         lambda: rest.insert_into_table(InsertIntoTableRequest(id=table),
                                        ipc_stream({"id": ["x"]}))),
        (ns_errors.InvalidInputError, ns_errors.ErrorCode.INVALID_INPUT,
         lambda: rest.insert_into_table(InsertIntoTableRequest(id=table, mode="sideways"),
                                        rows([9]))),
        (ns_errors.InvalidInputError, ns_errors.ErrorCode.INVALID_INPUT,
         lambda: rest.insert_into_table(InsertIntoTableRequest(id=table), b"not arrow")),
    ]
    for error_class, code, call in cases:
        with pytest.raises(error_class) as caught:
            call()
        assert caught.value.code == code, caught.value
        assert str(caught.value).strip(), "the error carries our detail"
    # None of the failed calls changed the table or dropped the namespace.
    assert rest.count_table_rows(CountTableRowsRequest(id=table)).count == 3
    rest.namespace_exists(NamespaceExistsRequest(id=[name]))
    rest.drop_namespace(DropNamespaceRequest(id=[name], behavior="Cascade"))


def test_rest_namespace_with_its_own_delimiter(base_url: str) -> None:
    dotted = RestNamespace(uri=base_url, delimiter=".")  # type: ignore[no-untyped-call]
    name = fresh_name()
    dotted.create_namespace(CreateNamespaceRequest(id=[name]))
    dotted.create_namespace(CreateNamespaceRequest(id=[name, "a"]))
    dotted.create_table(CreateTableRequest(id=[name, "a", "t"]), rows([1, 2]))
    assert dotted.count_table_rows(CountTableRowsRequest(id=[name, "a", "t"])).count == 2
    assert dotted.list_tables(ListTablesRequest(id=[name, "a"])).tables == ["t"]
    dotted.drop_namespace(DropNamespaceRequest(id=[name], behavior="Cascade"))
    with pytest.raises(ns_errors.NamespaceNotFoundError):
        dotted.namespace_exists(NamespaceExistsRequest(id=[name]))


def test_rest_namespace_drop_missing_namespace(
    rest: RestNamespace, base_url: str, http: requests.Session
) -> None:
    missing = [fresh_name()]
    # spec/SEED_SPEC.md: mode Fail on a missing namespace is 400; the client still reads code 1.
    with pytest.raises(ns_errors.NamespaceNotFoundError) as fail:
        rest.drop_namespace(DropNamespaceRequest(id=missing, mode="Fail"))
    assert fail.value.code == ns_errors.ErrorCode.NAMESPACE_NOT_FOUND

    # spec/SEED_SPEC.md: mode Skip on a missing namespace is 204, and a 204 has no body. The Rust
    # client insists on a JSON body here and reports a parse failure as Internal (18). The
    # contract wins; this pins the client's behaviour so that a change on either side shows.
    resp = http.post(f"{base_url}/v1/namespace/{missing[0]}/drop", json={"mode": "Skip"})
    assert resp.status_code == 204
    assert resp.content == b""
    with pytest.raises(ns_errors.LanceNamespaceError) as skipped:
        rest.drop_namespace(DropNamespaceRequest(id=missing, mode="Skip"))
    assert skipped.value.code == ns_errors.ErrorCode.INTERNAL
    assert "parse" in str(skipped.value).lower()


def test_rest_namespace_inserts_a_body_of_many_megabytes(rest: RestNamespace) -> None:
    # Lance pulls such a body from its own threads while the server still receives it.
    name = fresh_name()
    rest.create_namespace(CreateNamespaceRequest(id=[name]))
    n, dim = 20_000, 128
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array([float(i % 97) for i in range(n * dim)], pa.float32()), dim
    )
    data = pa.table({"id": pa.array(range(n), pa.int64()), "vector": vectors})
    # Many record batches, as a client streaming its data sends them.
    body = ipc_stream(pa.Table.from_batches(data.to_batches(max_chunksize=1000)))
    assert len(body) > 8 * 1024 * 1024
    table = [name, "big"]
    created = rest.create_table(CreateTableRequest(id=table), ipc_stream(data.slice(0, 0)))
    assert created.version == 1
    inserted = rest.insert_into_table(InsertIntoTableRequest(id=table), body)
    assert inserted.num_inserted_rows == n
    assert rest.count_table_rows(CountTableRowsRequest(id=table)).count == n
    assert rest.count_table_rows(
        CountTableRowsRequest(id=table, predicate=f"id = {n - 1}")
    ).count == 1
    rest.drop_namespace(DropNamespaceRequest(id=[name], behavior="Cascade"))
