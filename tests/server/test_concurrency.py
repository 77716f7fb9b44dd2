"""Concurrent writers on one table: no committed row is lost, every version returned exists.

Several threads insert and delete at once on main, one more writes to a branch; each
thread owns an id range, so the exact final rows follow from the answers it received.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.support.versioned import count, create, ok, post, read_ids_by_query, rows

WRITERS = 4
SECONDS = 3.0
SPAN = 1_000_000
SHARED = 30  # rows per writer in the first fragment, shared by all writers


@dataclass
class Outcome:
    """What one writer was told: committed ids, versions, and refused attempts."""

    live: set[int] = field(default_factory=set)
    checks: list[tuple[int, str, int]] = field(default_factory=list)  # (version, predicate, n)
    conflicts: int = 0
    errors: list[str] = field(default_factory=list)


def writer(base_url: str, table: str, owner: int, branch: str | None, stop: threading.Event,
           outcome: Outcome) -> None:
    params = {"branch": branch} if branch else {}
    with requests.Session() as http:
        step = 0
        while not stop.is_set():
            step += 1
            first = owner * SPAN + 1000 + step * 10  # clear of the shared rows
            batch = [first + k for k in range(3)]
            resp = http.post(f"{base_url}/v1/table/{table}/insert", data=rows(batch),
                             params=params,
                             headers={"Content-Type": "application/vnd.apache.arrow.stream"})
            if not record(resp, outcome):
                continue
            outcome.live.update(batch)
            in_batch = f"id >= {first} AND id < {first + 3}"
            outcome.checks.append((resp.json()["version"], in_batch, 3))
            if step % 2 == 0:
                # Delete one row of this batch and our oldest row: at first those sit in
                # the fragment all writers share, so deletes there race each other.
                doomed = [first, min(outcome.live)]
                body: dict[str, Any] = {"predicate": f"id IN ({doomed[0]}, {doomed[1]})"}
                if branch:
                    body["branch"] = branch
                resp = http.post(f"{base_url}/v1/table/{table}/delete", json=body)
                if record(resp, outcome):
                    outcome.live.difference_update(doomed)
                    gone = f"id IN ({doomed[0]}, {doomed[1]})"
                    outcome.checks.append((resp.json()["version"], gone, 0))


def record(resp: requests.Response, outcome: Outcome) -> bool:
    """True if the write committed; a 409 ConcurrentModification is an allowed refusal."""
    if resp.status_code == 200:
        return True
    if resp.status_code == 409 and resp.json().get("code") == 14:
        outcome.conflicts += 1
    else:
        outcome.errors.append(f"{resp.status_code}: {resp.text[:300]}")
    return False


def run_writers(targets: list[tuple[int, str | None]],
                start: Callable[[int, str | None, threading.Event, Outcome], None]
                ) -> dict[int, Outcome]:
    stop = threading.Event()
    outcomes = {owner: Outcome() for owner, _ in targets}
    threads = [threading.Thread(target=start, args=(owner, branch, stop, outcomes[owner]))
               for owner, branch in targets]
    for thread in threads:
        thread.start()
    time.sleep(SECONDS)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    return outcomes


def test_concurrent_inserts_and_deletes_lose_nothing(
    http: requests.Session, base_url: str, ns: str
) -> None:
    t = f"{ns}$busy"
    shared = [owner * SPAN + k for owner in range(1, WRITERS + 3) for k in range(1, SHARED + 1)]
    create(http, base_url, t, [0, *shared])
    ok(post(http, base_url, t, "branches/create", {"name": "side"}))
    targets: list[tuple[int, str | None]] = [(i + 1, None) for i in range(WRITERS)]
    targets += [(WRITERS + 1, "side"), (WRITERS + 2, "side")]

    def start(owner: int, branch: str | None, stop: threading.Event, outcome: Outcome) -> None:
        outcome.live.update(owner * SPAN + k for k in range(1, SHARED + 1))
        writer(base_url, t, owner, branch, stop, outcome)

    outcomes = run_writers(targets, start)
    for outcome in outcomes.values():
        assert outcome.errors == []
    main_owners = [owner for owner, branch in targets if branch is None]
    commits = sum(len(outcomes[o].checks) for o in main_owners)
    assert commits >= 2 * WRITERS, "the writers barely ran"

    # Exact rows, per owner and in total, on main and on the branch.
    for owner, branch in targets:
        own = f"id >= {owner * SPAN} AND id < {(owner + 1) * SPAN}"
        assert count(http, base_url, t, own, branch=branch) == len(outcomes[owner].live), owner
    def untouched(owners: list[int]) -> set[int]:
        return {o * SPAN + k for o in owners for k in range(1, SHARED + 1)}

    side_owners = [owner for owner, branch in targets if branch == "side"]
    expected_main = {0} | untouched(side_owners) | set().union(
        *(outcomes[o].live for o in main_owners))
    expected_side = {0} | untouched(main_owners) | set().union(
        *(outcomes[o].live for o in side_owners))
    assert count(http, base_url, t) == len(expected_main)
    assert count(http, base_url, t, branch="side") == len(expected_side)
    for ids, branch in ((expected_main, None), (expected_side, "side")):
        assert sorted(read_ids_by_query(http, base_url, t, branch=branch)) == sorted(ids)

    # Every version a writer was given exists, is unique on its branch, and shows its write.
    for branch in (None, "side"):
        owners = [o for o, b in targets if b == branch]
        given = [check[0] for o in owners for check in outcomes[o].checks]
        assert len(given) == len(set(given)), "two commits got the same version"
        params = {"branch": branch} if branch else {}
        listed = ok(http.post(f"{base_url}/v1/table/{t}/version/list", params=params))
        existing = {v["version"] for v in listed["versions"]}
        assert set(given) <= existing
        for owner in owners:
            for version, predicate, n in outcomes[owner].checks:
                assert count(http, base_url, t, predicate, version, branch) == n


def test_restore_during_writes(http: requests.Session, base_url: str, ns: str) -> None:
    """A restore racing inserts and deletes: each write commits (and its version shows it)
    or is refused with 409 ConcurrentModification; nothing else."""
    t = f"{ns}$racing"
    create(http, base_url, t, [0])
    restored: list[int] = []
    failures: list[str] = []

    def start(owner: int, branch: str | None, stop: threading.Event, outcome: Outcome) -> None:
        if owner > 0:
            writer(base_url, t, owner, branch, stop, outcome)
            return
        with requests.Session() as session:
            while not stop.is_set():
                resp = session.post(f"{base_url}/v1/table/{t}/restore", json={"version": 1})
                if resp.status_code == 200:
                    restored.append(resp.json()["version"])
                elif not (resp.status_code == 409 and resp.json()["code"] == 14):
                    failures.append(resp.text[:300])

    outcomes = run_writers([(0, None), (1, None), (2, None), (3, None)], start)
    assert failures == []
    for outcome in outcomes.values():
        assert outcome.errors == []
    assert restored, "no restore committed"
    checks = [check for outcome in outcomes.values() for check in outcome.checks]
    given = [version for version, _, _ in checks] + restored
    assert len(given) == len(set(given)), "two commits got the same version"
    listed = ok(http.post(f"{base_url}/v1/table/{t}/version/list"))["versions"]
    assert set(given) <= {v["version"] for v in listed}
    for version, predicate, n in checks:
        assert count(http, base_url, t, predicate, version) == n
    for version in restored:
        assert count(http, base_url, t, None, version) == 1
