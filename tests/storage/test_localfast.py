"""The local fast path of `Objects.get` / `Objects.walk` reads exactly what obstore would.

Reads of a local root skip obstore (`_storage/localfast.py`); every listing and read must
still answer what obstore's own would, for names holding any character a table or
namespace name may hold, and for obstore's staging files, which its listing hides.
"""

from __future__ import annotations

import os
import time
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


def test_file_names_match_obstore_directly_in_a_folder(tmp_path: Path) -> None:
    objects = Objects(tmp_path / "root")
    for name in NAMES:
        objects.put(f"f/{name}.json", b"{}")
    objects.put("f/sub/deeper.json", b"{}")  # below, not in, the folder
    objects.put("other/x.json", b"{}")
    (Path(objects.root) / "f" / "staged#3").write_bytes(b"")  # obstore's staging name
    expected = sorted(o.key[2:] for o in _through_obstore(objects, "f/") if "/" not in o.key[2:])
    assert sorted(objects.file_names("f/")) == expected == sorted(f"{n}.json" for n in NAMES)
    assert objects.file_names("missing/") == []


class _Counted:
    def __init__(self) -> None:
        self.listings = 0

    def __call__(self) -> None:
        self.listings += 1


def _age(folder: Path, seconds: float) -> None:
    stamp = time.time_ns() - int(seconds * 1e9)
    os.utime(folder, ns=(stamp, stamp))


def test_folder_names_list_again_whenever_the_folder_changed(tmp_path: Path) -> None:
    folder = tmp_path / "gens"
    folder.mkdir()
    counted = _Counted()
    names = localfast.FolderNames(str(tmp_path), counted)
    # Changes in quick succession, each within the file system's timestamp grain of the
    # one before: every call sees every change made before it.
    seen = []
    for gen in range(1, 30):
        (folder / f"{gen}.json").write_bytes(b"{}")
        seen.append(sorted(names("gens/")))
    assert seen == [sorted(f"{g}.json" for g in range(1, n + 1)) for n in range(1, 30)]
    (folder / "5.json").unlink()
    assert "5.json" not in names("gens/")
    # A stamp this recent is never trusted: each call lists.
    before = counted.listings
    names("gens/")
    names("gens/")
    assert counted.listings == before + 2


def test_folder_names_trust_a_stamp_older_than_the_grain(tmp_path: Path) -> None:
    folder = tmp_path / "gens"
    folder.mkdir()
    (folder / "1.json").write_bytes(b"{}")
    _age(folder, localfast.STAMP_GRAIN_NS / 1e9 + 5)
    counted = _Counted()
    names = localfast.FolderNames(str(tmp_path), counted)
    assert names("gens/") == ["1.json"]
    assert names("gens/") == ["1.json"]
    assert counted.listings == 1  # the second call was a stat
    # A new generation changes the folder's stamp: listed again at once.
    (folder / "2.json").write_bytes(b"{}")
    assert sorted(names("gens/")) == ["1.json", "2.json"]
    assert counted.listings == 2
    # A folder removed and made again answers what it holds now.
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    assert names("gens/") == []
    folder.mkdir()
    (folder / "7.json").write_bytes(b"{}")
    assert names("gens/") == ["7.json"]
