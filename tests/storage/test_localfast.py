"""The local fast path of `Objects.get` / `Objects.walk` reads exactly what obstore would.

Reads of a local root skip obstore (`_storage/localfast.py`); every listing and read must
still answer what obstore's own would, for names holding any character a table or
namespace name may hold, and for obstore's staging files, which its listing hides.
"""

from __future__ import annotations

from pathlib import Path

import obstore
import pyarrow as pa

from nsframe.server import serve_in_thread
from nsframe.server._storage import localfast
from nsframe.server._storage.objects import Objects, StoredObject

NAMES = ["plain", "we ird#x", "h#1", "é", "a%b", "q?m", "t~y", "co:lon"]


def _by_key(found: list[StoredObject]) -> list[StoredObject]:
    return sorted(found, key=lambda o: o.key)


def _through_obstore(objects: Objects, prefix: str) -> list[StoredObject]:
    return _by_key([StoredObject(m["path"], m["size"], m["last_modified"])
                    for page in obstore.list(objects.store, prefix) for m in page])


def test_walk_and_get_match_obstore(tmp_path: Path) -> None:
    import nsframe

    root = tmp_path / "root"
    with serve_in_thread(root) as server, nsframe.connect(server.url) as conn:
        conn.create_namespace("a")
        conn.create_namespace("a$b")
        for name in NAMES:
            table = conn.create_table(f"a$b${name}", pa.table({"x": [1, 2]}))
            table.insert(pa.table({"x": [3]}))
            table.create_tag("first", 1)
        conn.drop_table("a$b$plain")
        conn.create_table("a$b$plain", pa.table({"x": [1]}))
    objects = Objects(root)
    # A staged upload obstore has not moved into place yet is not an object.
    (root / "_catalog" / "root" / "ns" / "a" / "00000000000000000009.json#3").write_text("{}")
    for prefix in ["_catalog/", "_catalog/root/ns/", "tables/", "_nsframe/", "missing/"]:
        fast = _by_key(list(objects.walk(prefix)))
        assert fast == _through_obstore(objects, prefix), prefix
        for obj in fast:
            assert objects.get(obj.key) == bytes(obstore.get(objects.store, obj.key).bytes())
    assert objects.get("_catalog/missing/00000000000000000001.json") is None
    assert objects.get("_catalog/root/ns/a/00000000000000000001.json/below") is None


def test_unusual_keys_are_left_to_obstore() -> None:
    for key in ["", "/etc/passwd", "a/../b", "a//b", "./a", "a\\b", "a\x00b"]:
        assert not localfast.safe_key(key), key
    assert localfast.safe_key("_catalog/root/t/name with space/00000000000000000001.json")
