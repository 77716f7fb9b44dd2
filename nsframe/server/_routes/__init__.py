"""The route table: every operation the server answers, in one list.

Each route declares its path template, its methods and whether it reads or writes;
`_security.auth` authorizes requests from that declaration. A route module holds
handlers only and never imports another route module: what two of them share lives
in `_http` or `_storage`.
"""

from __future__ import annotations

from nsframe import _spec
from nsframe.server._http.routing import ApiRoute
from nsframe.server._routes import (
    branches,
    extended,
    indexes,
    namespaces,
    optimize,
    query,
    tables,
    tags,
    transactions,
    versions,
)

GET_POST = ("GET", "POST")

ROUTES: list[ApiRoute] = [
    # Namespaces
    ApiRoute(_spec.NAMESPACE_CREATE, namespaces.create_namespace, "write"),
    ApiRoute(_spec.NAMESPACE_LIST, namespaces.list_namespaces, "read", methods=GET_POST,
             json_body=False),
    ApiRoute(_spec.NAMESPACE_DESCRIBE, namespaces.describe_namespace, "read"),
    ApiRoute(_spec.NAMESPACE_EXISTS, namespaces.namespace_exists, "read"),
    ApiRoute(_spec.NAMESPACE_DROP, namespaces.drop_namespace, "write"),
    ApiRoute(_spec.NAMESPACE_TABLE_LIST, tables.list_tables, "read", methods=GET_POST,
             json_body=False),
    # Tables
    ApiRoute(_spec.TABLE_LIST_ALL, tables.list_all_tables, "read", methods=("GET",),
             json_body=False, has_id=False),
    ApiRoute(_spec.TABLE_CREATE, tables.create_table, "write", json_body=False),
    ApiRoute(_spec.TABLE_DECLARE, tables.declare_table, "write"),
    ApiRoute(_spec.TABLE_DESCRIBE, tables.describe_table, "read"),
    ApiRoute(_spec.TABLE_EXISTS, tables.table_exists, "read"),
    ApiRoute(_spec.TABLE_DROP, tables.drop_table, "write"),
    ApiRoute(_spec.TABLE_COUNT_ROWS, tables.count_rows, "read", methods=GET_POST),
    ApiRoute(_spec.TABLE_STATS, tables.table_stats, "read", methods=GET_POST),
    ApiRoute(_spec.TABLE_INSERT, tables.insert, "write", json_body=False),
    ApiRoute(_spec.TABLE_DELETE, tables.delete, "write"),
    ApiRoute(_spec.TABLE_QUERY, query.query_table, "read"),
    ApiRoute(_spec.TABLE_OPTIMIZE, optimize.optimize, "write"),
    # Indexes
    ApiRoute(_spec.INDEX_CREATE, indexes.create_index, "write"),
    ApiRoute(_spec.INDEX_CREATE_SCALAR, indexes.create_scalar_index, "write"),
    ApiRoute(_spec.INDEX_LIST, indexes.list_indexes, "read", methods=GET_POST),
    ApiRoute(_spec.INDEX_STATS, indexes.index_stats, "read", methods=GET_POST),
    ApiRoute(_spec.INDEX_DROP, indexes.drop_index, "write"),
    # Versions, tags, branches
    ApiRoute(_spec.VERSION_LIST, versions.list_versions, "read", methods=GET_POST),
    ApiRoute(_spec.VERSION_DESCRIBE, versions.describe_version, "read"),
    ApiRoute(_spec.RESTORE, versions.restore, "write"),
    ApiRoute(_spec.TAGS_LIST, tags.list_tags, "read", methods=GET_POST),
    ApiRoute(_spec.TAGS_CREATE, tags.create_tag, "write"),
    ApiRoute(_spec.TAGS_UPDATE, tags.update_tag, "write"),
    ApiRoute(_spec.TAGS_DELETE, tags.delete_tag, "write"),
    ApiRoute(_spec.TAGS_VERSION, tags.tag_version, "read"),
    ApiRoute(_spec.BRANCHES_LIST, branches.list_branches, "read", methods=GET_POST),
    ApiRoute(_spec.BRANCHES_CREATE, branches.create_branch, "write"),
    ApiRoute(_spec.BRANCHES_DELETE, branches.delete_branch, "write"),
    ApiRoute(_spec.TRANSACTION_DESCRIBE, transactions.describe_transaction, "read",
             namespaced=False),
    # Extended deployment
    ApiRoute(_spec.EXT_TABLES_LIST, tables.list_all_tables, "read", methods=("GET",),
             json_body=False, has_id=False),
    ApiRoute(_spec.EXT_TABLE_CREATE, extended.create_database_table, "write",
             json_body=False, has_id=False),
]
