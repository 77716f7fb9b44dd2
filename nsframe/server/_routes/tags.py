"""Table tags: named pointers to a version of a branch.

Tags belong to the table, not to a branch: one name space of tags per table, each
pointing at ``(branch, version)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lance.dataset import LanceDataset

from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe.exceptions import TagAlreadyExistsError, TagNotFoundError
from nsframe.server._http import dialect
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import PageRequest, paginate
from nsframe.server._models.versions import TagRequest, TagTargetRequest
from nsframe.server._storage.catalog import TableRef
from nsframe.server._storage.errors import lance_errors


def _seconds(value: object) -> int | None:
    return int(value.timestamp()) if isinstance(value, datetime) else None


def tag_entry(tag: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's `TagContents` (camelCase), plus timestamps in Unix seconds and metadata."""
    entry: dict[str, Any] = {"version": int(tag["version"]),
                             "manifestSize": int(tag.get("manifest_size") or 0)}
    branch = normalize_branch(tag.get("branch"))
    if branch is not None:
        entry["branch"] = branch
    for key, lance_key in (("createdAt", "created_at"), ("updatedAt", "updated_at")):
        seconds = _seconds(tag.get(lance_key))
        if seconds is not None:
            entry[key] = seconds
    entry["metadata"] = {str(k): str(v) for k, v in (tag.get("metadata") or {}).items()}
    return entry


def _table(call: Call[Any]) -> tuple[TableRef, LanceDataset]:
    ref = call.catalog.require_table(call.id)
    return ref, call.catalog.dataset(ref)


def _all_tags(call: Call[Any], ds: LanceDataset) -> dict[str, Any]:
    with lance_errors(f"Reading the tags of {call.label!r} failed"):
        return dict(ds.tags.list())


def _target(call: Call[TagTargetRequest], ref: TableRef) -> tuple[str | None, int]:
    """The ``(branch, version)`` a create or update names, checked to exist (404s)."""
    version = call.args.version
    branch = normalize_branch(call.args.branch)
    call.catalog.dataset(ref, branch=branch)  # 404 code 22 for a missing branch
    call.catalog.dataset(ref, branch=branch, version=version)  # 404 code 11
    return branch, version


def _missing_tag(call: Call[Any], name: str) -> TagNotFoundError:
    return TagNotFoundError(
        f"Table {call.label!r} has no tag {name!r}: list the tags to see which exist."
    )


# ----------------------------------------------------------------------- handlers
def list_tags(call: Call[PageRequest]) -> dict[str, Any]:
    _, ds = _table(call)
    tags = _all_tags(call, ds)
    page, next_token = paginate(list(tags), call.args.page_token, call.args.limit,
                                 listing="tags")
    entries = {name: tag_entry(tags[name]) for name in page}
    if dialect.is_lancedb(call.request):
        # LanceDB's tags.list() reads a bare map (spec/UPSTREAM_NOTES.md 7), with Lance's own
        # TagContents, whose times are RFC 3339 text.
        for name, entry in entries.items():
            for key, lance_key in (("createdAt", "created_at"), ("updatedAt", "updated_at")):
                when = tags[name].get(lance_key)
                entry.pop(key, None)
                if isinstance(when, datetime):
                    entry[key] = when.isoformat()
        return entries
    return {"tags": entries, "page_token": next_token}


def create_tag(call: Call[TagTargetRequest]) -> dict[str, Any]:
    name = call.args.tag
    ref, ds = _table(call)
    branch, version = _target(call, ref)
    if name in _all_tags(call, ds):
        raise TagAlreadyExistsError(
            f"Table {call.label!r} already has a tag {name!r}: use tags/update to move it."
        )
    with lance_errors(f"Creating tag {name!r} failed"):
        ds.tags.create(name, (branch, version))
    return {"tag": name, "version": version, "branch": branch or MAIN_BRANCH}


def update_tag(call: Call[TagTargetRequest]) -> dict[str, Any]:
    name = call.args.tag
    ref, ds = _table(call)
    branch, version = _target(call, ref)
    if name not in _all_tags(call, ds):
        raise _missing_tag(call, name)
    with lance_errors(f"Updating tag {name!r} failed"):
        ds.tags.update(name, (branch, version))
    return {"tag": name, "version": version, "branch": branch or MAIN_BRANCH}


def delete_tag(call: Call[TagRequest]) -> dict[str, Any]:
    name = call.args.tag
    _, ds = _table(call)
    if name not in _all_tags(call, ds):
        raise _missing_tag(call, name)
    with lance_errors(f"Deleting tag {name!r} failed"):
        ds.tags.delete(name)
    return {}


def tag_version(call: Call[TagRequest]) -> dict[str, Any]:
    """spec/SEED_SPEC.md: `{version, branch}`, with branch "main" for the main branch."""
    name = call.args.tag
    _, ds = _table(call)
    tag = _all_tags(call, ds).get(name)
    if tag is None:
        raise _missing_tag(call, name)
    return {"version": int(tag["version"]),
            "branch": normalize_branch(tag.get("branch")) or MAIN_BRANCH}
