"""Ownership of storage across servers: two registers of overlapping folders, sent at
once to two servers on one root, never both win (docs/storage.md, Ownership)."""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from ._rest import Api
from ._servers import ServerProcess
from .test_multiprocess import race

pytestmark = pytest.mark.multiprocess
ROUNDS = 12


def test_overlapping_registers_on_two_servers_never_both_win(
        servers: list[ServerProcess], ns: str, server_errors: list[str]) -> None:
    root = Path(servers[0].root)
    apis = [Api(server, server_errors) for server in servers]
    problems: list[str] = []
    for r in range(ROUNDS):
        outer = f"race-{uuid.uuid4().hex[:8]}/outer.lance"
        for key, ids in ((outer, [1, 2]), (f"{outer}/nested.lance", [3])):
            lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64())}), root / key)
        # Each folder under two names, one on each server: at most one of the four wins.
        answers = race([
            partial(apis[n % 2].table, f"{ns}${name}{n}-{r}", "register", {"location": where})
            for n in range(4)
            for name, where in [("outer", outer), ("inner", f"{outer}/nested.lance")]
        ])
        statuses = [a.status_code for a in answers]
        if statuses.count(200) > 1 or not set(statuses) <= {200, 409}:
            problems.append(f"round {r}: {statuses}")
        listed = {t for t in apis[0].tables(ns) if t.endswith(f"-{r}")}
        if len(listed) != statuses.count(200):
            problems.append(f"round {r}: answered {statuses}, the catalog lists {listed}")
    for api in apis:
        api.close()
    problems += [f"5xx: {e}" for e in server_errors]
    assert problems == [], "\n".join(problems)
