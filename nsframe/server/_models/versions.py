"""Versions, tags and branches: list, describe, restore; create, update, delete, look up."""

from __future__ import annotations

import re

from nsframe.server._http.fields import Count, shown
from nsframe.server._http.names import InTable
from nsframe.server._http.pagination import PageRequest
from nsframe.server._http.validation import Envelope

# Lance's rule for tag names, kept to ASCII: Lance 14 stores a non-ASCII tag under an
# escaped file name it cannot read back, which breaks every later tag listing.
TAG_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
MAX_BRANCH_BYTES = 200


class ListVersionsRequest(PageRequest, kw_only=True):
    branch: str | None = None
    # Newest first.
    descending: bool | None = None

    QUERY = (*PageRequest.QUERY, "branch", "descending")


class DescribeVersionRequest(Envelope, kw_only=True):
    # Missing: the latest version of the branch.
    version: Count | None = None
    branch: str | None = None


class RestoreRequest(Envelope, kw_only=True):
    version: Count
    branch: str | None = None


class TagName(str):
    @classmethod
    def describe(cls) -> str:
        return ("a tag name of 1-200 ASCII letters, digits, '.', '-' or '_', not starting "
                "with '.' nor ending with '.lock'")

    @classmethod
    def from_wire(cls, value: object) -> TagName:
        if not isinstance(value, str) or not TAG_NAME.fullmatch(value) \
                or value.startswith(".") or value.endswith(".lock"):
            raise ValueError(f"must be {cls.describe()}, got {shown(value)}")
        return cls(value)


class TagRequest(Envelope, kw_only=True):
    """Delete or look up a tag."""

    tag: TagName


class TagTargetRequest(TagRequest, kw_only=True):
    """Create or move a tag: the version (of the branch) it points at."""

    version: Count
    branch: str | None = None


class BranchName(str):
    @classmethod
    def describe(cls) -> str:
        return f"a non-empty branch name of at most {MAX_BRANCH_BYTES} bytes"

    @classmethod
    def from_wire(cls, value: object) -> BranchName:
        if not isinstance(value, str) or not value:
            raise ValueError(f"must be {cls.describe()}, got {shown(value)}")
        size = len(value.encode("utf-8"))
        if size > MAX_BRANCH_BYTES:
            raise ValueError(f"must be {cls.describe()}, got one of {size} bytes")
        return cls(value)


class BranchRequest(Envelope, kw_only=True):
    """Delete a branch."""

    name: BranchName


class CreateBranchRequest(BranchRequest, kw_only=True):
    # The branch and version to start from: main's latest when missing.
    from_branch: InTable | None = None
    from_version: Count | None = None
