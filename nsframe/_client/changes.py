"""The REST operations that change tables in place, rename or register them, and show query
plans: one method each, under `Client` (see `operations`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nsframe._client.transport import Transport
from nsframe._client.wire import as_dict
from nsframe._protocol import routes
from nsframe.exceptions import ResponseDecodeError


class ChangeOperations(Transport):
    """merge_insert, update, add/alter/drop columns, schema metadata, explain/analyze plans,
    rename, register and deregister (upstream's names in the docstrings)."""

    def merge_insert(self, ident: str, stream: Iterator[bytes], *, on: Sequence[str],
                     when_matched_update_all: bool = False,
                     when_matched_update_all_filt: str | None = None,
                     when_not_matched_insert_all: bool = False,
                     when_not_matched_by_source_delete: bool = False,
                     when_not_matched_by_source_delete_filt: str | None = None,
                     branch: str | None = None) -> dict[str, Any]:
        """``MergeInsertIntoTable``: an Arrow stream merged by the ``on`` columns."""
        params = {
            "on": ",".join(on),
            "when_matched_update_all": when_matched_update_all,
            "when_matched_update_all_filt": when_matched_update_all_filt,
            "when_not_matched_insert_all": when_not_matched_insert_all,
            "when_not_matched_by_source_delete": when_not_matched_by_source_delete,
            "when_not_matched_by_source_delete_filt": when_not_matched_by_source_delete_filt,
            "branch": branch,
        }
        return as_dict(self.call_json("POST", routes.TABLE_MERGE_INSERT, ident,
                                      idempotent=False, params=params, data=stream,
                                      content_type=routes.ARROW_STREAM))

    def update(self, ident: str, updates: Mapping[str, str], *, predicate: str | None = None,
               branch: str | None = None) -> dict[str, Any]:
        """``UpdateTable``: ``{column: SQL expression}`` on the rows ``predicate`` selects."""
        body = _compact(updates=[[c, e] for c, e in updates.items()], predicate=predicate,
                        branch=branch)
        return as_dict(self.post(routes.TABLE_UPDATE, ident, body, idempotent=False))

    def add_columns(self, ident: str, new_columns: Sequence[Mapping[str, Any]], *,
                    branch: str | None = None) -> dict[str, Any]:
        """``AlterTableAddColumns``: entries ``{"name", "expression"}`` (or, on nsframe's
        server, ``{"name", "data_type"}`` for a column of nulls)."""
        body = _compact(new_columns=[dict(c) for c in new_columns], branch=branch)
        return as_dict(self.post(routes.COLUMNS_ADD, ident, body, idempotent=False))

    def alter_columns(self, ident: str, alterations: Sequence[Mapping[str, Any]], *,
                      branch: str | None = None) -> dict[str, Any]:
        """``AlterTableAlterColumns``: entries ``{"path", "rename"?, "nullable"?,
        "data_type"?}``."""
        body = _compact(alterations=[dict(a) for a in alterations], branch=branch)
        return as_dict(self.post(routes.COLUMNS_ALTER, ident, body, idempotent=False))

    def drop_columns(self, ident: str, columns: Sequence[str], *,
                     branch: str | None = None) -> dict[str, Any]:
        """``AlterTableDropColumns``."""
        body = _compact(columns=list(columns), branch=branch)
        return as_dict(self.post(routes.COLUMNS_DROP, ident, body, idempotent=False))

    def update_schema_metadata(self, ident: str, values: Mapping[str, str | None], *,
                               branch: str | None = None) -> dict[str, Any]:
        """``UpdateTableSchemaMetadata``: a bare map in and out (null removes a key)."""
        return as_dict(self.post(routes.SCHEMA_METADATA_UPDATE, ident, dict(values),
                                 idempotent=False, params={"branch": branch}))

    def explain_plan(self, ident: str, query: dict[str, Any], *,
                     verbose: bool = False) -> str:
        """``ExplainTableQueryPlan``: the plan of a query body, as text."""
        return _text(self.post(routes.TABLE_EXPLAIN_PLAN, ident,
                               {"query": query, "verbose": verbose}, idempotent=True),
                     "explain_plan")

    def analyze_plan(self, ident: str, query: dict[str, Any]) -> str:
        """``AnalyzeTableQueryPlan``: the query run once, its plan with metrics, as text."""
        return _text(self.post(routes.TABLE_ANALYZE_PLAN, ident, query, idempotent=True),
                     "analyze_plan")

    def rename_table(self, ident: str, new_name: str, *,
                     new_namespace: Sequence[str] | None = None) -> dict[str, Any]:
        """``RenameTable``: the table keeps its data; ``new_namespace`` moves it."""
        body = _compact(new_table_name=new_name,
                        new_namespace_id=list(new_namespace) if new_namespace is not None
                        else None)
        return as_dict(self.post(routes.TABLE_RENAME, ident, body, idempotent=False))

    def register_table(self, ident: str, location: str, *, mode: str = "create",
                       properties: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``RegisterTable``: file an existing Lance dataset as table ``ident``."""
        body = _compact(location=location, mode=mode,
                        properties=dict(properties) if properties else None)
        return as_dict(self.post(routes.TABLE_REGISTER, ident, body, idempotent=False))

    def deregister_table(self, ident: str) -> dict[str, Any]:
        """``DeregisterTable``: forget the table, keep its data."""
        return as_dict(self.post(routes.TABLE_DEREGISTER, ident, idempotent=False))


def _text(answer: Any, operation: str) -> str:
    # The REST binding answers a JSON string; a server that wraps it in an object is
    # read too.
    if isinstance(answer, dict):
        answer = answer.get("plan", answer.get("analysis"))
    if not isinstance(answer, str):
        raise ResponseDecodeError(f"{operation} answered {answer!r}, not a plan text.")
    return answer


def _compact(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None}
