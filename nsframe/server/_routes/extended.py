"""The extended deployment's endpoints: `GET /v1/tables` and `POST /v1/tables/<table_name>`.

Both address the database the request selected (`x-service-database` or the host name,
see `_databases`). A table name may be a full identifier (``ns$table``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from nsframe._protocol import routes
from nsframe.exceptions import InvalidInputError, TableAlreadyExistsError
from nsframe.server._http.arrow import arrow_body
from nsframe.server._http.handler import Call
from nsframe.server._http.ids import parse_id
from nsframe.server._http.request import column_names
from nsframe.server._http.validation import Envelope
from nsframe.server._storage.writes import create_table


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    if length is not None:
        return length.strip() != "0"
    return "transfer-encoding" in request.headers


def create_database_table(call: Call[Envelope]) -> dict[str, Any]:
    """Create a table from an Arrow IPC stream body; with no body, declare it."""
    call.id = parse_id(call.request.path_params["table_name"], call.delimiter)
    catalog = call.catalog
    catalog.table_folder(call.id, for_child=True)
    exists = TableAlreadyExistsError(
        f"Table {call.label!r} already exists: pick another name, or insert into it with "
        f"POST /v1/table/{call.label}/insert."
    )
    if not _has_body(call.request):
        if catalog.find_table(call.id) is not None:
            raise exists
        catalog.declare_table(call.id, None)
        return {"table": call.label, "version": None, "num_inserted_rows": 0,
                "is_only_declared": True}
    content_type = call.request.headers.get("content-type", "")
    if "json" in content_type.lower():
        raise InvalidInputError(
            f"The body of POST /v1/tables/<table_name> is an Arrow IPC stream: send it as "
            f"{routes.ARROW_STREAM}, or send no body to declare the table."
        )
    checked, current = catalog.lookup_table(call.id)
    if current is not None:
        raise exists
    with arrow_body(call.request) as stream:
        ds, rows = create_table(catalog, call.id, stream, label=call.label,
                                previous=checked, properties={},
                                primary_key=column_names(call.request, "primary_key", None)
                                or None)
    return {"table": call.label, "version": ds.version, "num_inserted_rows": rows,
            "is_only_declared": False}
