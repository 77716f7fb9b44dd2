"""``tbl.tags`` and ``tbl.branches``: the named versions and lines of a table, as LanceDB
and Lance show them (``tags.create``, ``tags.list``, ``tags.get_version``, ...).

Each is a small object bound to one table handle; it sends nothing until a method is
called, so its repr needs no server.

The examples in the docstrings run as written (`make examples`) with the names conftest.py's
``doctest_namespace`` gives them: ``conn``, a connection to an embedded server, and ``tbl``,
its table ``items`` (id, name, vector; three rows), fresh for each docstring.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from nsframe._client.wire import paged
from nsframe._models import Branch, Tag

if TYPE_CHECKING:
    from nsframe._table import Table


class Tags:
    """The tags of a table: names for versions, across all its branches.

    ``tbl.tags()`` (calling the object) is ``tbl.tags.list()``, as it was before
    ``tags`` became an object.
    """

    def __init__(self, table: Table) -> None:
        self._table = table

    def list(self) -> dict[str, Tag]:
        """Every tag of the table, by name.

        Example:
            >>> _ = tbl.tags.create("v1")
            >>> tbl.tags.list()
            {'v1': Tag(name='v1', version=1, branch='main', manifest_size=...)}
        """
        client, ident = self._table._client, self._table.id
        found: dict[str, Tag] = {}
        for page in paged(lambda token: client.list_tags(ident, page_token=token)):
            entries = page.get("tags")
            if not isinstance(entries, dict):
                # LanceDB servers answer a bare map of tags, without the "tags" member.
                entries = {k: v for k, v in page.items() if isinstance(v, dict)}
            for name, data in sorted(entries.items()):
                found[name] = Tag.from_json(name, data)
        return found

    __call__ = list

    def get_version(self, tag: str) -> int:
        """The version ``tag`` names.

        Raises:
            TagNotFoundError: if there is no such tag.

        Example:
            >>> _ = tbl.tags.create("v1")
            >>> tbl.tags.get_version("v1")
            1
        """
        return int(self._table._client.tag_version(self._table.id, tag)["version"])

    def create(self, tag: str, version: int | None = None) -> Tag:
        """Name ``version`` (default: the version the table handle reads) of the handle's
        branch; returns the new tag.

        Raises:
            TagAlreadyExistsError: if the name is taken (`update` moves a tag).

        Example:
            >>> tbl.tags.create("v1")
            Tag(name='v1', version=1, branch='main', manifest_size=None)
            >>> tbl.tags.create("v1")
            Traceback (most recent call last):
            ...
            nsframe.exceptions.TagAlreadyExistsError: Table 'items' already has a tag 'v1': ...
        """
        table = self._table
        version = table.version if version is None else version
        table._client.create_tag(table.id, tag, version, branch=table.ref.branch)
        return Tag(name=tag, version=version, branch=table.branch_name)

    def update(self, tag: str, version: int) -> Tag:
        """Point an existing tag at another version of the handle's branch.

        Example:
            >>> _ = tbl.tags.create("best", 1)
            >>> _ = tbl.delete("id = 1")
            >>> tbl.tags.update("best", 2)
            Tag(name='best', version=2, branch='main', manifest_size=None)
        """
        table = self._table
        table._client.update_tag(table.id, tag, version, branch=table.ref.branch)
        return Tag(name=tag, version=version, branch=table.branch_name)

    def delete(self, tag: str) -> None:
        """Remove a tag (the version it named stays).

        Example:
            >>> _ = tbl.tags.create("v1")
            >>> tbl.tags.delete("v1")
            >>> tbl.tags.list()
            {}
        """
        self._table._client.delete_tag(self._table.id, tag)

    def __repr__(self) -> str:
        return f"Tags of table {self._table.id!r}: .list(), .create(), .update(), .delete()"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(t.name)}</td><td>{html.escape(t.branch)}</td>"
                       f"<td>{t.version}</td></tr>" for t in self.list().values())
        return (f"<div><b>Tags</b> of <code>{html.escape(self._table.id)}</code><table>"
                f"<tr><th>tag</th><th>branch</th><th>version</th></tr>{rows}</table></div>")


class Branches:
    """The named branches of a table (main is implied and not listed).

    ``tbl.branches()`` (calling the object) is ``tbl.branches.list()``.
    """

    def __init__(self, table: Table) -> None:
        self._table = table

    def list(self) -> dict[str, Branch]:
        """Every named branch, by name.

        Example:
            >>> _ = tbl.branches.create("dev")
            >>> list(tbl.branches.list())
            ['dev']
        """
        client, ident = self._table._client, self._table.id
        found: dict[str, Branch] = {}
        for page in paged(lambda token: client.list_branches(ident, page_token=token)):
            entries = page.get("branches")
            for name, data in sorted(entries.items() if isinstance(entries, dict) else []):
                found[name] = Branch.from_json(name, data if isinstance(data, dict) else {})
        return found

    __call__ = list

    def create(self, name: str, from_version: int | None = None) -> Table:
        """Fork branch ``name`` from the handle's branch (at ``from_version``, else the
        handle's pinned or latest version); returns a writable handle on the new branch.

        Raises:
            BranchAlreadyExistsError: if the name is taken.

        Example:
            >>> dev = tbl.branches.create("dev")
            >>> dev.delete("id = 1")
            WriteResult(version=2, num_rows=1, transaction_id=None)
            >>> dev.count_rows(), tbl.count_rows()
            (2, 3)
        """
        table = self._table
        if from_version is None:
            from_version = table.ref.version
        table._client.create_branch(table.id, name, from_branch=table.ref.branch,
                                    from_version=from_version)
        return table.branch(name)

    def get_version(self, name: str) -> int:
        """The latest version of branch ``name``.

        Example:
            >>> dev = tbl.branches.create("dev")
            >>> _ = dev.delete("id = 1")
            >>> tbl.branches.get_version("dev")
            2
        """
        return self._table.branch(name).version

    def delete(self, name: str) -> None:
        """Remove a branch and the versions only it holds.

        Example:
            >>> _ = tbl.branches.create("dev")
            >>> tbl.branches.delete("dev")
            >>> tbl.branches.list()
            {}
        """
        self._table._client.delete_branch(self._table.id, name)

    def __repr__(self) -> str:
        return f"Branches of table {self._table.id!r}: .list(), .create(), .delete()"

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(b.name)}</td><td>{html.escape(b.parent_branch)}"
                       f"</td><td>{b.parent_version}</td></tr>" for b in self.list().values())
        return (f"<div><b>Branches</b> of <code>{html.escape(self._table.id)}</code><table>"
                f"<tr><th>branch</th><th>forked from</th><th>at version</th></tr>{rows}"
                "</table></div>")
