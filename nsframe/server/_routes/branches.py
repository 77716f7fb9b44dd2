"""Table branches: create (from a version of main or of another branch), delete, list.

The main branch is implicit, as in Lance and LanceDB: it always exists, is never
listed, cannot be created or deleted, and ``"main"`` (or no branch) names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance.dataset import LanceDataset

from nsframe._protocol.defaults import MAIN_BRANCH, normalize_branch
from nsframe.exceptions import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    InvalidInputError,
    InvalidTableStateError,
)
from nsframe.server._http.handler import Call
from nsframe.server._http.pagination import PageRequest, paginate
from nsframe.server._models.versions import BranchRequest, CreateBranchRequest
from nsframe.server._storage.catalog import TableRef
from nsframe.server._storage.errors import lance_errors, scrub


def branch_entry(branch: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's `BranchContents`: camelCase, `parentBranch` absent for main's children."""
    entry: dict[str, Any] = {}
    parent = normalize_branch(branch.get("parent_branch"))
    if parent is not None:
        entry["parentBranch"] = parent
    entry["parentVersion"] = int(branch["parent_version"])
    entry["createAt"] = int(branch.get("create_at") or 0)
    entry["manifestSize"] = int(branch.get("manifest_size") or 0)
    entry["metadata"] = {str(k): str(v) for k, v in (branch.get("metadata") or {}).items()}
    return entry


def _all_branches(call: Call[Any], ds: LanceDataset) -> dict[str, Any]:
    with lance_errors(f"Reading the branches of {call.label!r} failed"):
        return dict(ds.branches.list())


def _table(call: Call[Any]) -> tuple[TableRef, LanceDataset]:
    ref = call.catalog.require_table(call.id)
    return ref, call.catalog.dataset(ref)


# ----------------------------------------------------------------------- handlers
def list_branches(call: Call[PageRequest]) -> dict[str, Any]:
    _, ds = _table(call)
    branches = _all_branches(call, ds)
    page, next_token = paginate(list(branches), call.args.page_token, call.args.limit,
                                 listing="branches")
    return {
        "branches": {name: branch_entry(branches[name]) for name in page},
        "page_token": next_token,
    }


def create_branch(call: Call[CreateBranchRequest]) -> dict[str, Any]:
    name = call.args.name
    if normalize_branch(name) is None:
        raise BranchAlreadyExistsError(
            f"The branch {MAIN_BRANCH!r} always exists: it is the main branch. Choose "
            "another name."
        )
    source = normalize_branch(call.args.from_branch)
    from_version = call.args.from_version
    catalog = call.catalog
    ref, ds = _table(call)
    # 404 code 22 for a missing source branch, code 11 for a missing version of it.
    origin = catalog.dataset(ref, branch=source, version=from_version)
    if name in _all_branches(call, ds):
        raise BranchAlreadyExistsError(
            f"Table {call.label!r} already has a branch {name!r}: delete it first or "
            "choose another name."
        )
    try:
        created = ds.create_branch(name, (source, origin.version))
    except (OSError, ValueError) as exc:
        if "is invalid" in str(exc):
            raise InvalidInputError(
                f"The branch name {name!r} is not allowed ({scrub(str(exc))}): use segments "
                "of letters, digits, '.', '-' or '_' joined by '/'."
            ) from exc
        with lance_errors(f"Creating branch {name!r} failed"):
            raise
    catalog.forget(ref)
    catalog.remember(ref, name, created)
    return {"name": name, "version": created.version,
            "parentBranch": source or MAIN_BRANCH, "parentVersion": origin.version}


def delete_branch(call: Call[BranchRequest]) -> dict[str, Any]:
    name = call.args.name
    if normalize_branch(name) is None:
        raise InvalidInputError(
            f"The branch {MAIN_BRANCH!r} is the main branch and cannot be deleted."
        )
    catalog = call.catalog
    ref, ds = _table(call)
    if name not in _all_branches(call, ds):
        raise BranchNotFoundError(
            f"Table {call.label!r} has no branch {name!r}: list the branches to see which "
            "exist."
        )
    try:
        ds.branches.delete(name)
    except (OSError, ValueError) as exc:
        if "referenced" in str(exc):
            raise InvalidTableStateError(
                f"Branch {name!r} cannot be deleted while other branches or tags point at "
                "its versions: delete those first."
            ) from exc
        with lance_errors(f"Deleting branch {name!r} failed"):
            raise
    finally:
        catalog.forget(ref)
    return {}
