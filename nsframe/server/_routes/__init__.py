"""The route table: every operation the server answers, in one list.

Each route declares its path template, its methods, whether it reads or writes and its
request model (`_models`; the bare envelope when it names none); `_security.auth`
authorizes requests from that declaration, and `_http.endpoint` fills the model before
the handler runs. Routes are ``light`` (metadata) unless they declare a weight: ``heavy``
for work that scans data, ``upload`` for work that reads an Arrow body as it arrives;
each weight has its own worker threads (`_http.capacity`). A route module holds handlers
only and never imports another route module: what two of them share lives in `_http`,
`_models` or `_storage`.

Not here: the probes ``/healthz`` and ``/readyz`` (`_protocol.routes.HEALTH_PATH`,
``READY_PATH``), answered by `_lifecycle.LifecycleApp` before any of these layers, so
that they need no credential and wait in no capacity lane.
"""

from __future__ import annotations

from nsframe._protocol import routes
from nsframe.server._http.pagination import PageRequest
from nsframe.server._http.routing import ApiRoute
from nsframe.server._models import changes as ch
from nsframe.server._models import indexes as ix
from nsframe.server._models import namespaces as ns
from nsframe.server._models import registry as rg
from nsframe.server._models import tables as tb
from nsframe.server._models import versions as vs
from nsframe.server._models.query import ExplainRequest, QueryRequest
from nsframe.server._routes import (
    branches,
    changes,
    extended,
    indexes,
    namespaces,
    optimize,
    query,
    registry,
    tables,
    tags,
    transactions,
    versions,
)

GET_POST = ("GET", "POST")
# Listings read no body (json_body=False): one sent anyway must still be JSON.
NO_BODY = "none"

ROUTES: list[ApiRoute] = [
    # Namespaces
    ApiRoute(routes.NAMESPACE_CREATE, namespaces.create_namespace, "write",
             model=ns.CreateNamespaceRequest),
    ApiRoute(routes.NAMESPACE_LIST, namespaces.list_namespaces, "read", methods=GET_POST,
             model=PageRequest, json_body=False, body=NO_BODY),
    ApiRoute(routes.NAMESPACE_DESCRIBE, namespaces.describe_namespace, "read"),
    ApiRoute(routes.NAMESPACE_EXISTS, namespaces.namespace_exists, "read"),
    ApiRoute(routes.NAMESPACE_DROP, namespaces.drop_namespace, "write",
             model=ns.DropNamespaceRequest),
    ApiRoute(routes.NAMESPACE_TABLE_LIST, tables.list_tables, "read", methods=GET_POST,
             model=tb.ListTablesRequest, json_body=False, body=NO_BODY),
    # Tables
    ApiRoute(routes.TABLE_LIST_ALL, tables.list_all_tables, "read", methods=("GET",),
             model=PageRequest, has_id=False, json_body=False, body=NO_BODY),
    ApiRoute(routes.TABLE_CREATE, tables.create_table, "write", model=tb.CreateTableRequest,
             json_body=False, weight="upload"),
    ApiRoute(routes.TABLE_DECLARE, tables.declare_table, "write", model=tb.DeclareTableRequest),
    ApiRoute(routes.TABLE_DESCRIBE, tables.describe_table, "read",
             model=tb.DescribeTableRequest),
    ApiRoute(routes.TABLE_EXISTS, tables.table_exists, "read"),
    ApiRoute(routes.TABLE_DROP, tables.drop_table, "write"),
    ApiRoute(routes.TABLE_COUNT_ROWS, tables.count_rows, "read", methods=GET_POST,
             model=tb.CountRowsRequest, weight="heavy"),
    ApiRoute(routes.TABLE_STATS, tables.table_stats, "read", methods=GET_POST,
             model=tb.TableStatsRequest),
    ApiRoute(routes.TABLE_INSERT, tables.insert, "write", model=tb.InsertRequest,
             json_body=False, weight="upload"),
    ApiRoute(routes.TABLE_DELETE, tables.delete, "write", model=tb.DeleteRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_QUERY, query.query_table, "read", model=QueryRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_OPTIMIZE, optimize.optimize, "write", model=tb.OptimizeRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_MERGE_INSERT, changes.merge_insert, "write",
             model=ch.MergeInsertRequest, json_body=False, weight="upload"),
    ApiRoute(routes.TABLE_UPDATE, changes.update, "write", model=ch.UpdateRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_EXPLAIN_PLAN, query.explain_plan, "read", model=ExplainRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_ANALYZE_PLAN, query.analyze_plan, "read", model=QueryRequest,
             weight="heavy"),
    ApiRoute(routes.TABLE_RENAME, registry.rename_table, "write",
             model=rg.RenameTableRequest),
    ApiRoute(routes.TABLE_REGISTER, registry.register_table, "write",
             model=rg.RegisterTableRequest),
    ApiRoute(routes.TABLE_DEREGISTER, registry.deregister_table, "write"),
    # Columns and schema
    ApiRoute(routes.COLUMNS_ADD, changes.add_columns, "write", model=ch.AddColumnsRequest,
             weight="heavy"),
    ApiRoute(routes.COLUMNS_ALTER, changes.alter_columns, "write",
             model=ch.AlterColumnsRequest, weight="heavy"),
    ApiRoute(routes.COLUMNS_DROP, changes.drop_columns, "write", model=ch.DropColumnsRequest),
    ApiRoute(routes.SCHEMA_METADATA_UPDATE, changes.update_schema_metadata, "write",
             model=ch.SchemaMetadataRequest, json_body=False, body="json"),
    # Indexes
    ApiRoute(routes.INDEX_CREATE, indexes.create_index, "write", model=ix.CreateIndexRequest,
             weight="heavy"),
    ApiRoute(routes.INDEX_CREATE_SCALAR, indexes.create_scalar_index, "write",
             model=ix.CreateScalarIndexRequest, weight="heavy"),
    ApiRoute(routes.INDEX_LIST, indexes.list_indexes, "read", methods=GET_POST,
             model=ix.ListIndexesRequest),
    ApiRoute(routes.INDEX_STATS, indexes.index_stats, "read", methods=GET_POST,
             model=ix.IndexStatsRequest),
    ApiRoute(routes.INDEX_DROP, indexes.drop_index, "write", model=ix.DropIndexRequest),
    # Versions, tags, branches
    ApiRoute(routes.VERSION_LIST, versions.list_versions, "read", methods=GET_POST,
             model=vs.ListVersionsRequest),
    ApiRoute(routes.VERSION_DESCRIBE, versions.describe_version, "read",
             model=vs.DescribeVersionRequest),
    ApiRoute(routes.RESTORE, versions.restore, "write", model=vs.RestoreRequest),
    ApiRoute(routes.VERSION_CREATE, registry.table_version_records, "write",
             model=rg.TableVersionRecordRequest),
    ApiRoute(routes.VERSION_DELETE, registry.table_version_records, "write",
             model=rg.TableVersionRecordRequest),
    ApiRoute(routes.TAGS_LIST, tags.list_tags, "read", methods=GET_POST, model=PageRequest),
    ApiRoute(routes.TAGS_CREATE, tags.create_tag, "write", model=vs.TagTargetRequest),
    ApiRoute(routes.TAGS_UPDATE, tags.update_tag, "write", model=vs.TagTargetRequest),
    ApiRoute(routes.TAGS_DELETE, tags.delete_tag, "write", model=vs.TagRequest),
    ApiRoute(routes.TAGS_VERSION, tags.tag_version, "read", model=vs.TagRequest),
    ApiRoute(routes.BRANCHES_LIST, branches.list_branches, "read", methods=GET_POST,
             model=PageRequest),
    ApiRoute(routes.BRANCHES_CREATE, branches.create_branch, "write",
             model=vs.CreateBranchRequest),
    ApiRoute(routes.BRANCHES_DELETE, branches.delete_branch, "write", model=vs.BranchRequest),
    ApiRoute(routes.TRANSACTION_DESCRIBE, transactions.describe_transaction, "read",
             namespaced=False),
    # Extended deployment
    ApiRoute(routes.EXT_TABLES_LIST, tables.list_all_tables, "read", methods=("GET",),
             model=PageRequest, has_id=False, json_body=False, body=NO_BODY),
    ApiRoute(routes.EXT_TABLE_CREATE, extended.create_database_table, "write",
             json_body=False, has_id=False, weight="upload"),
]
