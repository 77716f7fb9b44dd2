"""Route templates, media types and header names of the REST contract.

Standard library only.
"""

from __future__ import annotations

API_PREFIX = "/v1"
DEFAULT_PORT = 2333

# Liveness and readiness probes: outside the API, answered without a credential.
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"
JSON = "application/json"

API_KEY_HEADER = "x-api-key"
DATABASE_HEADER = "x-service-database"
CONTEXT_HEADER_PREFIX = "x-service-ctx-"
LEGACY_CONTEXT_HEADER_PREFIX = "x-lance-ctx-"
REQUEST_ID_HEADER = "x-request-id"
# Answered with a query's rows: the table version they reflect (LanceDB's name for it).
READ_VERSION_HEADER = "x-lancedb-version"

# Namespaces
NAMESPACE_CREATE = "/v1/namespace/{id}/create"
NAMESPACE_LIST = "/v1/namespace/{id}/list"
NAMESPACE_DESCRIBE = "/v1/namespace/{id}/describe"
NAMESPACE_EXISTS = "/v1/namespace/{id}/exists"
NAMESPACE_DROP = "/v1/namespace/{id}/drop"
NAMESPACE_TABLE_LIST = "/v1/namespace/{id}/table/list"

# Tables
TABLE_LIST_ALL = "/v1/table"
TABLE_CREATE = "/v1/table/{id}/create"
TABLE_DECLARE = "/v1/table/{id}/declare"
TABLE_DESCRIBE = "/v1/table/{id}/describe"
TABLE_EXISTS = "/v1/table/{id}/exists"
TABLE_DROP = "/v1/table/{id}/drop"
TABLE_COUNT_ROWS = "/v1/table/{id}/count_rows"
TABLE_INSERT = "/v1/table/{id}/insert"
TABLE_DELETE = "/v1/table/{id}/delete"
TABLE_QUERY = "/v1/table/{id}/query"
TABLE_STATS = "/v1/table/{id}/stats"
# nsframe extension (LanceDB's `Table.optimize`): compact fragments, refresh indexes.
TABLE_OPTIMIZE = "/v1/table/{id}/optimize"
TABLE_MERGE_INSERT = "/v1/table/{id}/merge_insert"
TABLE_UPDATE = "/v1/table/{id}/update"
TABLE_EXPLAIN_PLAN = "/v1/table/{id}/explain_plan"
TABLE_ANALYZE_PLAN = "/v1/table/{id}/analyze_plan"
TABLE_RENAME = "/v1/table/{id}/rename"
TABLE_REGISTER = "/v1/table/{id}/register"
TABLE_DEREGISTER = "/v1/table/{id}/deregister"

# Columns and schema
COLUMNS_ADD = "/v1/table/{id}/add_columns"
COLUMNS_ALTER = "/v1/table/{id}/alter_columns"
COLUMNS_DROP = "/v1/table/{id}/drop_columns"
SCHEMA_METADATA_UPDATE = "/v1/table/{id}/schema_metadata/update"

# Indexes
INDEX_CREATE = "/v1/table/{id}/create_index"
INDEX_CREATE_SCALAR = "/v1/table/{id}/create_scalar_index"
INDEX_LIST = "/v1/table/{id}/index/list"
INDEX_STATS = "/v1/table/{id}/index/{index_name}/stats"
INDEX_DROP = "/v1/table/{id}/index/{index_name}/drop"

# Versions, tags, branches
VERSION_LIST = "/v1/table/{id}/version/list"
VERSION_DESCRIBE = "/v1/table/{id}/version/describe"
# Served as 404 Unsupported: Lance commits its own versions (docs/compatibility.md).
VERSION_CREATE = "/v1/table/{id}/version/create"
VERSION_DELETE = "/v1/table/{id}/version/delete"
RESTORE = "/v1/table/{id}/restore"
TAGS_LIST = "/v1/table/{id}/tags/list"
TAGS_CREATE = "/v1/table/{id}/tags/create"
TAGS_UPDATE = "/v1/table/{id}/tags/update"
TAGS_DELETE = "/v1/table/{id}/tags/delete"
TAGS_VERSION = "/v1/table/{id}/tags/version"
BRANCHES_LIST = "/v1/table/{id}/branches/list"
BRANCHES_CREATE = "/v1/table/{id}/branches/create"
BRANCHES_DELETE = "/v1/table/{id}/branches/delete"
TRANSACTION_DESCRIBE = "/v1/transaction/{id}/describe"

# Extended deployment
EXT_TABLES_LIST = "/v1/tables"
EXT_TABLE_CREATE = "/v1/tables/{table_name}"
