"""The extended deployment's endpoints: `GET /v1/tables` and `POST /v1/tables/<table_name>`.

Both address the database the request selected (`x-service-database` or the host name,
see `_databases`). A table name may be a full identifier (``ns$table``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from nsframe import _spec
from nsframe.exceptions import InvalidInputError, TableAlreadyExistsError
from nsframe.server import _tables
from nsframe.server._handler import Call, route
from nsframe.server._ids import parse_id


def list_database_tables(call: Call) -> dict[str, Any]:
    """Every table of the database, paginated: ``{"tables": [...], "page_token": ...}``."""
    return _tables.list_all_tables(call)


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    if length is not None:
        return length.strip() != "0"
    return "transfer-encoding" in request.headers


def create_database_table(call: Call) -> dict[str, Any]:
    """Create a table from an Arrow IPC stream body; with no body, declare it."""
    call.id = parse_id(call.request.path_params["table_name"], call.delimiter)
    catalog = call.catalog
    catalog.require_namespace(call.id[:-1])
    ref = catalog.table_ref(call.id)
    exists = TableAlreadyExistsError(
        f"Table {call.label!r} already exists: pick another name, or insert into it with "
        f"POST /v1/table/{call.label}/insert."
    )
    if not _has_body(call.request):
        with catalog.ddl_lock:
            if catalog.table_state(ref) != "missing":
                raise exists
            catalog.declare_table(ref, None)
        return {"table": call.label, "version": None, "num_inserted_rows": 0,
                "is_only_declared": True}
    content_type = call.request.headers.get("content-type", "")
    if "json" in content_type.lower():
        raise InvalidInputError(
            f"The body of POST /v1/tables/<table_name> is an Arrow IPC stream: send it as "
            f"{_spec.ARROW_STREAM}, or send no body to declare the table."
        )
    if catalog.table_state(ref) != "missing":
        raise exists
    ds, rows = _tables.write_stream(call, ref, mode="create")
    return {"table": call.label, "version": ds.version, "num_inserted_rows": rows,
            "is_only_declared": False}


routes = [
    route(_spec.EXT_TABLES_LIST, list_database_tables, ("GET",), json_body=False, has_id=False),
    route(_spec.EXT_TABLE_CREATE, create_database_table, json_body=False, has_id=False),
]
