"""Server processes on one storage root, clients on all of them at once.

Written for the pair of servers of ``conftest.py``; ``test_replicas.py`` runs the same
tests on three replicas over an ``s3://`` root.

Every row has an id no other write uses, so what each answer promises can be checked
exactly: by the rows of the table at the version it names, and by the whole version
history, replayed from the answers the clients received.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
import requests

from ._rest import Api, bad_rows, duplicates, rows, run_threads
from ._servers import ServerProcess

pytestmark = pytest.mark.multiprocess

BARRIER_SECONDS = 60.0


def code_of(resp: requests.Response) -> int | None:
    try:
        body = resp.json()
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None


# ------------------------------------------------------------- a. mixed writers
CLIENTS = 4
PLAN = 2 * ["insert", "insert", "delete", "tag", "insert", "bad", "insert", "restore",
        "insert", "delete", "tag", "insert"]
RESERVED = 900_000  # rows of the first version; client c deletes 900_000 + 100c + k
REJECTED = 800_000  # ids only ever sent in inserts the server must refuse


@dataclass
class Op:
    kind: str
    client: int
    server: str
    status: int
    code: int | None
    version: int | None = None
    ids: list[int] = field(default_factory=list)
    restore_to: int | None = None
    tag: str | None = None
    text: str = ""


def insert_ids(client: int, step: int) -> list[int]:
    return [(client + 1) * 100_000 + step * 10 + k for k in range(3)]


def reserved_ids(client: int) -> list[int]:
    return [RESERVED + client * 100 + k for k in range(20)]


def mixed_client(client: int, apis: list[Api], table: str, barrier: threading.Barrier,
                 log: list[Op], log_lock: threading.Lock) -> None:
    """Runs PLAN, one step per barrier, on servers alternating per request."""
    last_version = 1
    first_insert: int | None = None
    deletes = 0
    ops: list[Op] = []

    def note(api: Api, kind: str, send: Callable[[], requests.Response], **extra: Any) -> Op:
        try:
            resp = send()
        except requests.ConnectionError as exc:
            # No answer at all: status 0, an outcome the checks treat as unknown.
            op = Op(kind, client, api.server.name, 0, None, text=str(exc)[:200], **extra)
        else:
            op = Op(kind, client, api.server.name, resp.status_code, code_of(resp),
                    text=resp.text[:200], **extra)
            if resp.status_code == 200 and kind in ("insert", "delete", "restore"):
                op.version = resp.json().get("version")
        ops.append(op)
        return op

    try:
        for step, kind in enumerate(PLAN):
            barrier.wait(BARRIER_SECONDS)
            api = apis[(client + step) % len(apis)]
            if kind == "insert":
                ids = insert_ids(client, step)
                op = note(api, "insert", partial(api.insert, table, rows(ids)), ids=ids)
                if op.status == 200 and op.version is not None:
                    last_version = op.version
                    first_insert = first_insert or op.version
            elif kind == "delete":
                doomed = reserved_ids(client)[2 * deletes:2 * deletes + 2]
                deletes += 1
                op = note(api, "delete",
                          partial(api.delete, table, f"id IN ({doomed[0]}, {doomed[1]})"),
                          ids=doomed)
                if op.status == 200 and op.version is not None:
                    last_version = op.version
            elif kind == "tag":
                own = f"c{client}-s{step}"
                for kind_of, name in (("tag", own), ("shared-tag", f"shared-s{step}")):
                    body = {"tag": name, "version": last_version}
                    note(api, kind_of, partial(api.table, table, "tags/create", body),
                         tag=name, version=last_version)
            elif kind == "bad":
                ids = [REJECTED + client * 100 + step]
                note(api, "bad-insert", partial(api.insert, table, bad_rows(ids)), ids=ids)
                note(api, "bad-delete", partial(api.delete, table, "id = = 3"))
            elif kind == "restore":
                target = first_insert or 1
                op = note(api, "restore",
                          partial(api.table, table, "restore", {"version": target}),
                          restore_to=target)
                if op.status == 200 and op.version is not None:
                    last_version = op.version
    except BaseException:
        barrier.abort()  # the other clients stop waiting for this one
        raise
    finally:
        with log_lock:
            log.extend(ops)


ALLOWED: dict[str, set[tuple[int, int | None]]] = {
    # kind: the statuses (and error codes) a correct server may answer
    "insert": {(200, None), (409, 14)},
    "delete": {(200, None), (409, 14)},
    "restore": {(200, None), (409, 14)},
    "tag": {(200, None)},
    "shared-tag": {(200, None), (409, 9)},
    "bad-insert": {(400, 20)},
    "bad-delete": {(400, 13)},
}


def test_mixed_writes_on_two_servers_lose_nothing(servers: list[ServerProcess], ns: str,
                                                  server_errors: list[str]) -> None:
    """a. Appends, deletes, tags, restores and refused writes from four clients on two
    servers: the version history is exactly the acknowledged writes, each version holds
    exactly what the answers imply, and refused writes left nothing."""
    table = f"{ns}$mixed"
    apis = [[Api(s, server_errors) for s in servers] for _ in range(CLIENTS)]
    reserved = [i for c in range(CLIENTS) for i in reserved_ids(c)]
    created = apis[0][0].create(table, rows(reserved))
    assert created.status_code == 200, created.text
    assert created.json()["version"] == 1
    barrier = threading.Barrier(CLIENTS)
    log: list[Op] = []
    lock = threading.Lock()
    crashed = run_threads([
        partial(mixed_client, c, apis[c], table, barrier, log, lock) for c in range(CLIENTS)
    ])
    assert crashed == [], crashed
    assert sum(op.kind == "insert" and op.status == 200 for op in log) >= CLIENTS * 3, \
        "the clients barely wrote: " + "; ".join(f"{op.kind} {op.status}" for op in log)
    problems = check_answers(log) + check_history(apis[0], table, log, reserved)
    assert problems == [], f"{len(problems)} problem(s):\n" + "\n".join(problems)
    assert server_errors == [], server_errors


def check_answers(log: list[Op]) -> list[str]:
    """Answers no correct server gives, 5xx included."""
    return [f"{op.kind} by client {op.client} on {op.server}: {op.status} {op.text}"
            for op in log
            if (op.status, op.code if op.status != 200 else None) not in ALLOWED[op.kind]]


def check_history(reader: list[Api], table: str, log: list[Op],
                  reserved: list[int]) -> list[str]:
    """The version history against the answers: one version per acknowledged write, each
    holding exactly what its write implies; tags where their answers put them."""
    problems: list[str] = []
    writes = [op for op in log if op.status == 200 and op.kind in ("insert", "delete", "restore")]
    if any(op.version is None for op in writes):
        return ["a write's answer names no version"]
    listed = [api.versions(table) for api in reader]
    if any(versions != listed[0] for versions in listed):
        problems.append(f"the servers list different versions: {listed}")
    versions = listed[0]
    acked = [op.version for op in writes if op.version is not None]
    for v in duplicates(acked):
        claims = [(op.kind, op.client, op.server) for op in writes if op.version == v]
        problems.append(f"acknowledged writes {claims} all claim v{v}: one overwrote another")
    if set(acked) - set(versions):
        problems.append(f"acknowledged versions not listed: {sorted(set(acked) - set(versions))}")
    if set(versions) - set(acked) - {1}:
        problems.append("versions no acknowledged write made (a refused or failed write "
                        f"committed): {sorted(set(versions) - set(acked) - {1})}")
    # Each version's rows, replayed from the answers.
    contents: dict[int, Counter[int]] = {}
    for n, version in enumerate(versions):
        contents[version] = Counter(reader[n % len(reader)].ids(table, version=version))
        if duplicates(contents[version].elements()):
            problems.append(f"v{version} holds rows twice: "
                            f"{sorted(duplicates(contents[version].elements()))[:10]}")
    if contents.get(1) != Counter(reserved):
        problems.append("version 1 is not the created table")
    by_version = {op.version: op for op in writes}
    for before, version in pairwise(versions):
        op = by_version.get(version)
        if op is None:
            continue
        prior = contents[before]
        if op.kind == "insert":
            expected = prior + Counter(op.ids)
        elif op.kind == "delete":
            expected = Counter({i: n for i, n in prior.items() if i not in op.ids})
        else:
            expected = contents.get(op.restore_to or 0, Counter())
        if contents[version] != expected:
            missing = sorted((expected - contents[version]).elements())
            extra = sorted((contents[version] - expected).elements())
            problems.append(f"v{version} ({op.kind} by client {op.client} on {op.server}) is "
                            f"not v{before} + its write: missing {missing}, extra {extra}")
    latest = contents[versions[-1]]
    for api in reader:
        if Counter(api.ids(table)) != latest or api.count(table) != sum(latest.values()):
            problems.append(f"{api.server.name}: the table's rows are not its last version's")
    refused = {i for op in log if op.kind == "bad-insert" for i in op.ids}
    if any(refused & set(c) for c in contents.values()):
        problems.append("a refused insert's rows are in the table")

    # Tags: every acknowledged one names its version; each shared name has one winner.
    tags = [api.tags(table) for api in reader]
    if any(listed_tags != tags[0] for listed_tags in tags):
        problems.append("the servers list different tags")
    for op in log:
        if op.kind in ("tag", "shared-tag") and op.status == 200 \
                and tags[0].get(op.tag or "") != op.version:
            problems.append(f"tag {op.tag} acknowledged for v{op.version} by client "
                            f"{op.client}, but lists v{tags[0].get(op.tag or '')}")
    granted = Counter(op.tag for op in log if op.kind == "shared-tag" and op.status == 200)
    for name in sorted({op.tag or "" for op in log if op.kind == "shared-tag"}):
        if granted.get(name, 0) != 1:
            problems.append(f"tag {name} created concurrently was granted {granted.get(name, 0)} "
                            "times (must be exactly once)")
    return problems


# ---------------------------------------------------------- b. racing creates
CREATE_ROUNDS = 20
CREATORS = 4  # spread over the servers


def race(targets: list[Any]) -> list[Any]:
    """Run the targets together, released by one barrier; their results in order."""
    barrier = threading.Barrier(len(targets))
    results: list[Any] = [None] * len(targets)

    def runner(n: int) -> None:
        try:
            barrier.wait(BARRIER_SECONDS)
            results[n] = targets[n]()
        except BaseException:
            barrier.abort()
            raise

    failures = run_threads([partial(runner, n) for n in range(len(targets))])
    assert failures == [], failures
    return results


def test_racing_table_creates_have_one_winner(servers: list[ServerProcess], ns: str,
                                              server_errors: list[str]) -> None:
    """b. Four creates of one table, spread over the servers, at once: one 200, three 409,
    and the table holds exactly the winner's rows (each creator sends a different number)."""
    apis = [Api(servers[n % len(servers)], server_errors) for n in range(CREATORS)]
    problems: list[str] = []
    for r in range(CREATE_ROUNDS):
        table = f"{ns}$race{r}"
        bodies = [[r * 1000 + n * 100 + k for k in range(n + 2)] for n in range(CREATORS)]
        answers = race([partial(apis[n].create, table, rows(bodies[n]))
                        for n in range(CREATORS)])
        statuses = [(a.status_code, code_of(a) if a.status_code != 200 else None)
                    for a in answers]
        winners = [n for n, a in enumerate(answers) if a.status_code == 200]
        if len(winners) != 1 or sorted(statuses).count((409, 5)) != CREATORS - 1:
            problems.append(f"round {r}: answers {statuses}")
        if not winners:
            continue
        for api in apis[:len(servers)]:  # one client of each server
            held = sorted(api.ids(table))
            if len(winners) == 1 and held != bodies[winners[0]]:
                problems.append(f"round {r}: {api.server.name} holds {held}, the winner "
                                f"sent {bodies[winners[0]]}")
            elif held not in [bodies[w] for w in winners]:
                problems.append(f"round {r}: {api.server.name} holds {held}, no winner's rows")
            elif len(winners) > 1:
                lost = [w for w in winners if bodies[w] != held]
                problems.append(f"round {r}: {api.server.name} holds creator "
                                f"{bodies.index(held)}'s rows only: the rows of acknowledged "
                                f"create(s) {lost} are lost")
        history = apis[0].versions(table)
        if history != [answers[winners[0]].json()["version"]]:
            problems.append(f"round {r}: versions {history} after a single create")
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], f"{len(problems)} problem(s) in {CREATE_ROUNDS} rounds:\n" + \
        "\n".join(problems)


def test_racing_namespace_creates_have_one_winner(servers: list[ServerProcess],
                                                  server_errors: list[str]) -> None:
    """Four creates (mode create) of one namespace, spread over the servers, at once: one
    200."""
    apis = [Api(servers[n % len(servers)], server_errors) for n in range(CREATORS)]
    problems: list[str] = []
    stamp = time.monotonic_ns()
    for r in range(10):
        name = f"nsrace{stamp}x{r}"
        answers = race([partial(apis[n].create_namespace, name) for n in range(CREATORS)])
        statuses = sorted((a.status_code, code_of(a) if a.status_code != 200 else None)
                          for a in answers)
        if statuses != [(200, None)] + [(409, 2)] * (CREATORS - 1):
            problems.append(f"round {r}: answers {statuses}")
        if apis[1].namespaces().count(name) != 1:
            problems.append(f"round {r}: not listed exactly once")
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], f"{len(problems)} problem(s) in 10 rounds:\n" + "\n".join(problems)


# ------------------------------------------- c. first inserts into a declared table
def test_first_inserts_into_a_declared_table_both_land(servers: list[ServerProcess], ns: str,
                                                       server_errors: list[str]) -> None:
    """c. The first two inserts into a declared table, on two servers, at once: both are
    acknowledged and both sets of rows are there, once each, on every server."""
    apis = [Api(s, server_errors) for s in servers]
    problems: list[str] = []
    rounds = 8
    for r in range(rounds):
        table = f"{ns}$decl{r}"
        declared = apis[0].table(table, "declare", {})
        assert declared.status_code == 200, declared.text
        bodies = [[r * 1000 + k for k in range(3)], [r * 1000 + 500 + k for k in range(4)]]
        answers = race([partial(apis[n].insert, table, rows(bodies[n])) for n in range(2)])
        statuses = [a.status_code for a in answers]
        if statuses != [200, 200]:
            problems.append(f"round {r}: answers {[(a.status_code, a.text[:120]) for a in answers]}"
                            )
        expected = sorted(i for n, body in enumerate(bodies) if statuses[n] == 200 for i in body)
        for api in apis:
            held = sorted(api.ids(table))
            if held != expected:
                problems.append(f"round {r}: {api.server.name} holds {held}, acknowledged "
                                f"{expected}")
        versions = [a.json()["version"] for a in answers if a.status_code == 200]
        if len(set(versions)) != len(versions):
            problems.append(f"round {r}: both inserts claim version {versions[0]}")
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], f"{len(problems)} problem(s) in {rounds} rounds:\n" + \
        "\n".join(problems)


# --------------------------------------------------------- d. drop during inserts
@dataclass
class Attempt:
    started: float
    ended: float
    status: int
    text: str


def test_drop_during_inserts_stays_dropped(servers: list[ServerProcess], ns: str,
                                           server_errors: list[str]) -> None:
    """d. Three clients insert through server A while a fourth drops the table through
    server B: once the drop is acknowledged the table is gone on both servers and stays
    gone while late inserts finish; a new create then holds only its own rows."""
    a, b = servers[0], servers[-1]
    problems: list[str] = []
    for r in range(3):
        table = f"{ns}$hot{r}"
        with Api(a, server_errors) as api:
            assert api.create(table, rows(range(100))).status_code == 200
        stop = threading.Event()
        dropped = threading.Event()
        drop_done: list[float] = []
        attempts: list[Attempt] = []
        seen: list[str] = []
        lock = threading.Lock()

        def inserter(k: int, table: str = table, stop: threading.Event = stop,
                     attempts: list[Attempt] = attempts, lock: threading.Lock = lock) -> None:
            with Api(a, server_errors) as api:
                n = 0
                while not stop.is_set():
                    n += 1
                    first = 1_000_000 * (k + 1) + n * 10_000
                    started = time.monotonic()
                    try:
                        resp = api.insert(table, rows(range(first, first + 2000)))
                        status, text = resp.status_code, resp.text[:200]
                    except requests.ConnectionError as exc:
                        # An answer sent before the body was read (a 404, say) can reach
                        # the client as a reset: the outcome is unknown, not a failure.
                        status, text = 0, str(exc)[:200]
                    with lock:
                        attempts.append(Attempt(started, time.monotonic(), status, text))

        def dropper(table: str = table, stop: threading.Event = stop,
                    dropped: threading.Event = dropped, drop_done: list[float] = drop_done
                    ) -> None:
            try:
                time.sleep(0.4)
                with Api(b, server_errors) as api:
                    resp = api.table(table, "drop")
                    assert resp.status_code == 200, resp.text
                drop_done.append(time.monotonic())
                dropped.set()
                time.sleep(0.8)  # inserts keep coming after the drop
            finally:
                stop.set()

        def watcher(table: str = table, stop: threading.Event = stop,
                    dropped: threading.Event = dropped, seen: list[str] = seen) -> None:
            dropped.wait(30)
            with Api(a, server_errors) as on_a, Api(b, server_errors) as on_b:
                while not stop.is_set():
                    for api in (on_a, on_b):
                        status = api.status(table)
                        if status != 404:
                            seen.append(f"{api.server.name} exists -> {status}")
                    time.sleep(0.02)

        failures = run_threads([*(partial(inserter, k) for k in range(3)), dropper, watcher])
        assert failures == [], failures
        assert drop_done, "the drop did not answer"
        late = [t for t in attempts if t.started > drop_done[0]]
        early_ok = [t for t in attempts if t.started < drop_done[0] and t.status == 200]
        if not early_ok:
            problems.append(f"round {r}: no insert landed before the drop")
        bad_late = [f"{t.status} {t.text}" for t in late if t.status not in (0, 404)]
        if bad_late:
            problems.append(f"round {r}: inserts sent after the drop answered {bad_late[:3]}")
        odd = [f"{t.status} {t.text}" for t in attempts if t.status not in (0, 200, 404, 409)]
        if odd:
            problems.append(f"round {r}: inserts answered {odd[:3]}")
        if seen:
            problems.append(f"round {r}: the dropped table reappeared: {seen[:5]}")
        time.sleep(0.3)
        for server in servers:
            with Api(server, server_errors) as api:
                for action in ("exists", "describe", "count_rows"):
                    status = api.status(table, action)
                    if status != 404:
                        problems.append(f"round {r}: {server.name} {action} -> {status} "
                                        "after the drop")
                if table.split("$")[1] in api.tables(ns) or table in api.all_tables():
                    problems.append(f"round {r}: {server.name} still lists the table")
        # A new create makes a new, empty-but-for-its-rows table.
        fresh = list(range(7_000_000, 7_000_010))
        with Api(b, server_errors) as api:
            resp = api.create(table, rows(fresh))
            if resp.status_code != 200:
                problems.append(f"round {r}: create after the drop -> {resp.status_code} "
                                f"{resp.text[:200]}")
                continue
        for server in servers:
            with Api(server, server_errors) as api:
                held = sorted(api.ids(table))
                if held != fresh:
                    problems.append(f"round {r}: {server.name}: the new table holds "
                                    f"{len(held)} rows, {len(set(held) - set(fresh))} of "
                                    "them from before the drop")
                for version in api.versions(table):
                    stale = set(api.ids(table, version=version)) - set(fresh)
                    if stale:
                        problems.append(f"round {r}: {server.name}: version {version} of "
                                        f"the new table holds {len(stale)} old rows")
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], f"{len(problems)} problem(s):\n" + "\n".join(problems)


# ------------------------------------------- e. re-created behind a server's back
def attempt(read: Callable[[], object]) -> object:
    """What ``read`` returned, or the failure it raised, for a report of all reads."""
    try:
        return read()
    except (AssertionError, KeyError, requests.RequestException) as exc:
        return f"failed: {str(exc)[:200]}"


def read_through(api: Api, table: str) -> dict[str, object]:
    """What one server says of the table: rows, counts and version, now and before."""
    return {
        "count": attempt(lambda: api.count(table)),
        "ids": attempt(lambda: sorted(api.ids(table))),
        "version": attempt(lambda: api.describe(table).get("version")),
        "num_rows": attempt(lambda: api.describe(table)["stats"]["num_rows"]),
        "count@2": attempt(lambda: api.count(table, version=2)),
        "ids@1": attempt(lambda: sorted(api.ids(table, version=1))),
    }


def test_recreated_table_is_never_read_as_the_old_one(servers: list[ServerProcess], ns: str,
                                                      server_errors: list[str]) -> None:
    """e. Server A reads a table at version 3; server B drops it and builds a new one up
    to version 3 again: A answers only with the new table's rows and numbers."""
    a, b = servers[0], servers[-1]
    problems: list[str] = []
    with Api(a, server_errors) as on_a, Api(b, server_errors) as on_b:
        for r in range(3):
            table = f"{ns}$again{r}"
            old = [r * 100_000 + k for k in range(20)]
            assert on_b.create(table, rows(old[:10])).status_code == 200
            assert on_b.insert(table, rows(old[10:15])).json()["version"] == 2
            assert on_b.insert(table, rows(old[15:])).json()["version"] == 3
            # A reads it, so whatever A keeps of it is warm.
            assert on_a.count(table) == 20
            assert sorted(on_a.ids(table)) == old
            assert on_a.describe(table)["version"] == 3
            assert on_a.count(table, version=2) == 15

            assert on_b.table(table, "drop").status_code == 200
            new = [r * 100_000 + 50_000 + k for k in range(8)]
            assert on_b.create(table, rows(new[:4])).status_code == 200
            assert on_b.insert(table, rows(new[4:6])).json()["version"] == 2
            assert on_b.insert(table, rows(new[6:])).json()["version"] == 3

            seen = read_through(on_a, table)
            expected = {"count": 8, "ids": new, "version": 3, "num_rows": 8,
                        "count@2": 6, "ids@1": new[:4]}
            wrong = {k: v for k, v in seen.items() if v != expected[k]}
            if wrong:
                problems.append(f"round {r}: server A answered {wrong}, expected "
                                f"{ {k: expected[k] for k in wrong} }")
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], "\n".join(problems)
