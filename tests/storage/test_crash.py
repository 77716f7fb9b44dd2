"""A server SIGKILLed in the middle of an operation, then restarted on the same root.

After the restart every namespace and table is either wholly there (all its rows, all
its tables) or wholly gone (its name free for a new create), never half of each, and
start-up leaves nothing behind: no trash, no temporary files, no data files that no
version references, no bytes beyond what the live tables need. The disk checks find
datasets by their ``_versions`` directory, so they hold for any layout of the root.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from ._disk import datasets, leftover_files, tree_bytes, unreferenced_data_files
from ._rest import Api, rows, stream_bytes, wide_stream_chunks, wide_table
from ._servers import ServerProcess

pytestmark = pytest.mark.crash

SLACK = 64 * 1024  # bytes the root may grow by for reasons of its own (catalog, logs)
GROWTH = 1.5  # ... and by this factor of what it needs
SETTLE_SECONDS = 5.0  # how long start-up may take to clear leftovers


@dataclass
class Outcome:
    """What the killed request got: an answer, if it finished in time, or the error."""

    answer: requests.Response | None = None
    error: str | None = None

    @property
    def acknowledged(self) -> bool:
        return self.answer is not None and self.answer.status_code == 200

    def __str__(self) -> str:
        if self.answer is not None:
            return f"answered {self.answer.status_code}"
        return f"no answer: {self.error}"


def kill_during(server: ServerProcess, send: Callable[[], requests.Response],
                moment: Callable[[], None]) -> Outcome:
    """Send a request from a thread, wait for ``moment()`` to return, SIGKILL the server."""
    outcome = Outcome()

    def run() -> None:
        try:
            outcome.answer = send()
        except requests.RequestException as exc:
            outcome.error = f"{type(exc).__name__}: {str(exc)[:200]}"

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        moment()
    finally:
        server.kill()
    thread.join(30)
    assert not thread.is_alive(), "the killed request never returned"
    return outcome


def after(delay: float) -> Callable[[], None]:
    """A moment ``delay`` seconds from now."""
    start = time.monotonic()
    return lambda: time.sleep(max(0.0, delay - (time.monotonic() - start)))


def live_tables(api: Api) -> list[str]:
    """Every table the server shows with data (declared-only ones have none on disk)."""
    return [t for t in api.all_tables() if not api.describe(t).get("is_only_declared")]


@dataclass(frozen=True)
class Snapshot:
    """The root before the killed operation: its bytes, its Lance datasets, live tables.

    Datasets are counted against this rather than against the tables alone, so that a
    catalog kept as a Lance dataset of its own (or any other such file) is no leftover.
    """

    bytes: int
    datasets: frozenset[Path]
    tables: frozenset[str]

    @classmethod
    def take(cls, api: Api, root: Path) -> Snapshot:
        return cls(tree_bytes(root), frozenset(datasets(root)), frozenset(live_tables(api)))

    def dataset_bytes(self, since: Snapshot) -> int:
        """The bytes of the datasets that appeared after ``since``."""
        return sum(tree_bytes(path) for path in self.datasets - since.datasets)


def disk_problems(api: Api, root: Path, bound: int, before: Snapshot) -> list[str]:
    """What is left on disk that a clean start-up removes; empty once the root is clean."""
    problems = [f"leftover file {name}" for name in leftover_files(root)[:10]]
    size = tree_bytes(root)
    if size > bound:
        problems.append(f"the root holds {size} bytes, more than the {bound} its live data "
                        "needs: leftovers of the killed operation")
    found = datasets(root)
    tables = live_tables(api)
    expected = len(before.datasets) + len(tables) - len(before.tables)
    if len(found) != expected:
        problems.append(f"{len(found)} Lance datasets on disk where {expected} hold the "
                        f"{len(tables)} live tables: "
                        f"{[p.relative_to(root).as_posix() for p in found][:6]}...")
    for dataset in found:
        try:
            orphans = unreferenced_data_files(dataset)
        except Exception as exc:  # a dataset pylance cannot open is itself a leftover
            problems.append(f"unreadable dataset {dataset.relative_to(root)}: {exc}")
            continue
        if orphans:
            problems.append(f"{len(orphans)} data file(s) no version of "
                            f"{dataset.relative_to(root)} references")
    return problems


def settled(api: Api, root: Path, bound: int, before: Snapshot) -> list[str]:
    """The disk problems left once start-up's collection ended (it runs beside serving)
    and ``SETTLE_SECONDS`` more went by."""
    api.server.collected()
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        problems = disk_problems(api, root, bound, before)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.25)


def total_bytes(api: Api, table: str) -> int:
    resp = api.table(table, "stats")
    assert resp.status_code == 200, resp.text
    return int(resp.json()["total_bytes"])


@pytest.fixture
def api(solo: ServerProcess) -> Iterator[Api]:
    with Api(solo) as client:
        yield client


def root_of(server: ServerProcess) -> Path:
    return Path(server.root)


# ------------------------------------------------------ i. cascade drop of a namespace
TABLES = 80  # today's server drops them in tens of milliseconds, longer under load
CHILD_TABLES = 3
ROWS = 200


def doomed_contents() -> dict[str, list[int]]:
    """Table id -> its ids, for the namespace ``doomed`` and its child ``doomed$kid``."""
    tables = {f"doomed$t{n:02d}": list(range(n * 1000, n * 1000 + ROWS)) for n in range(TABLES)}
    tables.update({f"doomed$kid$k{n}": list(range(500_000 + n * 1000, 500_000 + n * 1000 + ROWS))
                   for n in range(CHILD_TABLES)})
    return tables


@pytest.mark.parametrize("delay", [0.01, 0.02, 0.04, 0.1, 0.3])
def test_cascade_drop_killed_is_all_or_nothing(solo: ServerProcess, api: Api,
                                               delay: float) -> None:
    """i. A cascade drop of a namespace of 83 tables (3 in a child namespace), killed
    ``delay`` seconds in: afterwards the namespace is listed with every table and row, or
    it is gone with all of them and its name is free; no trash is left."""
    root = root_of(solo)
    assert api.create_namespace("keep").status_code == 200
    assert api.create("keep$t", rows(range(10))).status_code == 200
    without = Snapshot.take(api, root)
    assert api.create_namespace("doomed").status_code == 200
    assert api.create_namespace("doomed$kid").status_code == 200
    contents = doomed_contents()
    for table, ids in contents.items():
        resp = api.create(table, rows(ids))
        assert resp.status_code == 200, resp.text
    with_doomed = Snapshot.take(api, root)
    doomed_bytes = with_doomed.dataset_bytes(since=without)

    with Api(solo, api.server_errors) as killed:
        outcome = kill_during(
            solo, lambda: killed.namespace("doomed", "drop", {"behavior": "cascade"}),
            after(delay))
    solo.start()

    print(f"killed {delay}s into the drop: {outcome}")
    problems: list[str] = []
    if api.count("keep$t") != 10:
        problems.append("the namespace next door lost rows")
    present = api.namespace("doomed", "exists").status_code
    if outcome.acknowledged and present != 404:
        problems.append(f"the drop was acknowledged, yet doomed exists -> {present}")
    if present == 200:
        # All of it, or it should not be listed.
        listed = {f"doomed${t}" for t in api.tables("doomed")}
        listed |= {f"doomed$kid${t}" for t in api.tables("doomed$kid")} \
            if api.namespace("doomed$kid", "exists").status_code == 200 else set()
        missing = sorted(set(contents) - listed)
        if missing:
            problems.append(f"doomed is listed but {len(missing)} of its {len(contents)} "
                            f"tables are gone: {missing[:5]}...")
        for table in sorted(listed & set(contents)):
            held = sorted(api.ids(table)) if api.status(table) == 200 else None
            if held != contents[table]:
                problems.append(f"{table} is listed but holds "
                                f"{'nothing' if held is None else len(held)} rows")
    elif present == 404:
        if "doomed" in api.namespaces():
            problems.append("doomed does not exist, yet the root lists it")
        if api.namespace("doomed$kid", "exists").status_code != 404:
            problems.append("doomed is gone but its child namespace exists")
        for table in contents:
            status = api.status(table)
            if status != 404:
                problems.append(f"doomed is gone but {table} exists -> {status}")
        leaked = [t for t in api.all_tables() if t.startswith("doomed$")]
        if leaked:
            problems.append(f"doomed is gone but the table listing shows {leaked[:5]}")
    else:
        problems.append(f"doomed exists -> {present}")

    # Gone: the root may keep what the namespace's creation added besides its datasets.
    needed = with_doomed.bytes - (0 if present == 200 else doomed_bytes)
    problems += settled(api, root, int(GROWTH * needed) + SLACK, with_doomed)

    if present == 404:
        # The name is free: a new namespace of that name starts empty.
        assert api.create_namespace("doomed").status_code == 200
        reborn = api.tables("doomed")
        if reborn:
            problems.append(f"a new namespace doomed holds tables of the old one: {reborn[:5]}")
    problems += [f"5xx: {e}" for e in api.server_errors]
    assert problems == [], (f"killed {delay}s into the drop ({outcome}), doomed exists -> "
                            f"{present}:\n" + "\n".join(problems))


# ------------------------------------------------------- ii. create with a large body
CREATE_ROWS = 2_000_000  # 32 MB of Arrow


@pytest.mark.parametrize("moment", ["mid-upload", "upload-sent", "upload-sent+0.05s"])
def test_create_killed_is_all_or_nothing(solo: ServerProcess, api: Api, moment: str) -> None:
    """ii. A create with a 32 MB body, killed half-way through the upload, once the body
    is sent, or just after: the table then has all its rows or does not exist (and its
    name is free), and no partial data files are left."""
    root = root_of(solo)
    assert api.create_namespace("n").status_code == 200
    assert api.create("n$small", rows(range(5))).status_code == 200
    chunks = wide_stream_chunks(wide_table(0, CREATE_ROWS))
    half, sent = threading.Event(), threading.Event()

    def body() -> Iterator[bytes]:
        for n, chunk in enumerate(chunks, start=1):
            yield chunk
            if n == len(chunks) // 2:
                half.set()
        sent.set()  # every byte is handed to the socket

    def when() -> None:
        assert (half if moment == "mid-upload" else sent).wait(60), "the upload stalled"
        if moment.endswith("+0.05s"):
            time.sleep(0.05)

    before = Snapshot.take(api, root)
    with Api(solo, api.server_errors) as killed:
        outcome = kill_during(solo, lambda: killed.create("n$big", body()), when)
    solo.start()

    print(f"killed at {moment} of the create: {outcome}")
    problems: list[str] = []
    if api.count("n$small") != 5:
        problems.append("the table next door lost rows")
    status = api.status("n$big")
    if outcome.acknowledged and status != 200:
        problems.append(f"the create was acknowledged, yet exists -> {status}")
    bound = int(GROWTH * before.bytes) + SLACK
    if status == 200:
        seen = (api.count("n$big"), api.count("n$big", "id >= 1000000"), api.versions("n$big"))
        if seen != (CREATE_ROWS, CREATE_ROWS - 1_000_000, [1]):
            problems.append(f"n$big exists with (rows, rows from 1e6, versions) {seen}: "
                            f"not the {CREATE_ROWS} rows created")
        bound = int(GROWTH * (before.bytes + total_bytes(api, "n$big"))) + SLACK
    elif status == 404:
        if "big" in api.tables("n"):
            problems.append("n$big does not exist, yet its namespace lists it")
    else:
        problems.append(f"n$big exists -> {status}")
    problems += settled(api, root, bound, before)

    # The table works (or its name is free) after the restart.
    if status == 200:
        resp = api.insert("n$big", stream_bytes(wide_table(50_000_000, 3)))
        expect = CREATE_ROWS + 3
    else:
        resp = api.create("n$big", stream_bytes(wide_table(50_000_000, 3)))
        expect = 3
    if resp.status_code != 200 or api.count("n$big") != expect:
        problems.append(f"after the restart, a write to n$big -> {resp.status_code} "
                        f"{resp.text[:200]}, then {api.count('n$big')} rows, not {expect}")
    problems += [f"5xx: {e}" for e in api.server_errors]
    assert problems == [], (f"killed at {moment} of the create ({outcome}), n$big exists -> "
                            f"{status}:\n" + "\n".join(problems))


# ------------------------------------------------------------- iii. a large insert
BEFORE_ROWS = 1000
INSERT_ROWS = 3_000_000  # 48 MB of Arrow; about 0.3 s of work for an idle server
FIRST_NEW = 10_000_000


@pytest.mark.parametrize("delay", [0.05, 0.1, 0.15, 0.25])
def test_insert_killed_is_all_or_nothing(solo: ServerProcess, api: Api, delay: float) -> None:
    """iii. A 48 MB insert killed ``delay`` seconds in: the table holds the rows of before
    or of after, at version 1 or 2, takes writes again, and keeps no unreferenced data."""
    root = root_of(solo)
    assert api.create_namespace("n").status_code == 200
    resp = api.create("n$t", stream_bytes(wide_table(0, BEFORE_ROWS)))
    assert resp.status_code == 200, resp.text
    table_bytes = total_bytes(api, "n$t")
    body = stream_bytes(wide_table(FIRST_NEW, INSERT_ROWS, seed=1), batch_rows=65536)
    before = Snapshot.take(api, root)
    with Api(solo, api.server_errors) as killed:
        outcome = kill_during(solo, lambda: killed.insert("n$t", body), after(delay))
    solo.start()

    print(f"killed {delay}s into the insert: {outcome}")
    problems: list[str] = []
    total = api.count("n$t")
    new = api.count("n$t", f"id >= {FIRST_NEW}")
    history = api.versions("n$t")
    if (total, new, history) not in [(BEFORE_ROWS, 0, [1]),
                                     (BEFORE_ROWS + INSERT_ROWS, INSERT_ROWS, [1, 2])]:
        problems.append(f"(rows, new rows, versions) is {(total, new, history)}: neither "
                        "before nor after the insert")
    if outcome.acknowledged and new != INSERT_ROWS:
        problems.append(f"the insert was acknowledged, yet {new} of its rows are there")
    grown = total_bytes(api, "n$t") - table_bytes
    problems += settled(api, root, int(GROWTH * (before.bytes + grown)) + SLACK, before)

    # The table takes writes after the restart.
    resp = api.insert("n$t", stream_bytes(wide_table(90_000_000, 5)))
    if resp.status_code != 200 or api.count("n$t") != total + 5:
        problems.append(f"after the restart an insert -> {resp.status_code} {resp.text[:200]}")
    problems += [f"5xx: {e}" for e in api.server_errors]
    assert problems == [], (f"killed {delay}s into the insert ({outcome}), then "
                            f"{total} rows:\n" + "\n".join(problems))
