"""A store that ignores ``If-None-Match``: refused at start-up, and shown to lose commits.

Between the servers and moto sits a loopback proxy that drops the header, as some
proxies and S3-compatible stores do. Every create-if-absent write then overwrites: the
catalog's generations and Lance's manifests alike. The server must refuse to start on
such a store. Started anyway (``--skip-conditional-put-check``), the multi-process
harness must find lost commits, which shows it able to fail. An ``s3+ddb://`` root
commits through DynamoDB instead, so behind the very same proxy it starts and loses
nothing.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from functools import partial
from pathlib import Path

import pytest

from tests.support.s3 import Proxy, S3Endpoint

from . import test_multiprocess as multiprocess
from ._rest import Api, rows, run_threads
from ._servers import REPO, ServerProcess, ServerStartError, cluster
from .test_multiprocess import (
    CLIENTS,
    Op,
    check_answers,
    check_history,
    mixed_client,
    reserved_ids,
)

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]
UNSAFE = "--skip-conditional-put-check"


def mixed_writes(servers: list[ServerProcess], attempts: int = 3) -> tuple[list[str], int]:
    """The mixed-writes harness of test_multiprocess on ``servers``, up to ``attempts``
    times until it finds problems; returns them and how many writes were acknowledged."""
    problems: list[str] = []
    acknowledged = 0
    for _ in range(attempts):
        server_errors: list[str] = []
        ns = f"m{uuid.uuid4().hex[:10]}"
        with Api(servers[0], server_errors) as api:
            assert api.create_namespace(ns).status_code == 200
        table = f"{ns}$mixed"
        apis = [[Api(s, server_errors) for s in servers] for _ in range(CLIENTS)]
        reserved = [i for c in range(CLIENTS) for i in reserved_ids(c)]
        created = apis[0][0].create(table, rows(reserved))
        assert created.status_code == 200, created.text
        barrier = threading.Barrier(CLIENTS)
        log: list[Op] = []
        lock = threading.Lock()
        crashed = run_threads([partial(mixed_client, c, apis[c], table, barrier, log, lock)
                               for c in range(CLIENTS)])
        assert crashed == [], crashed
        acknowledged += sum(op.status == 200 and op.kind == "insert" for op in log)
        try:
            problems = check_answers(log) + check_history(apis[0], table, log, reserved)
        except AssertionError as exc:  # the history cannot even be read back whole
            problems = [f"reading the history failed: {exc}"]
        problems += [f"5xx: {e}" for e in server_errors]
        if problems:
            break
    return problems, acknowledged


def test_server_refuses_a_store_that_ignores_if_none_match(
        s3: S3Endpoint, tmp_path: Path, code_under_test: Path) -> None:
    with Proxy(s3.url, strip_if_none_match=True) as proxy:
        server = ServerProcess(s3.new_root("refused"), tmp_path, "refused",
                               env=s3.through(proxy.url).env())
        with pytest.raises(ServerStartError) as refused:
            server.start()
        assert proxy.stripped >= 1
    message = str(refused.value)
    assert "exited with status 2" in message
    assert "If-None-Match" in message and "s3+ddb://" in message and UNSAFE in message
    assert s3.secret_key not in message
    # `nsframe gc` refuses that store too.
    with Proxy(s3.url, strip_if_none_match=True) as proxy:
        gc = subprocess.run([sys.executable, "-m", "nsframe._cli", "gc", s3.new_root("gc")],
                            env={**server.environment(), **s3.through(proxy.url).env()},
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert gc.returncode == 2 and "If-None-Match" in gc.stderr, gc.stderr


def test_without_the_check_the_harness_finds_lost_commits(
        s3: S3Endpoint, tmp_path: Path, code_under_test: Path) -> None:
    """The same replicas and harness as test_replicas, over the stripping proxy, with the
    check bypassed: acknowledged commits go missing, and the harness says so."""
    with Proxy(s3.url, strip_if_none_match=True) as proxy, \
            cluster(s3.new_root("unsafe"), 3, tmp_path, env=s3.through(proxy.url).env(),
                    extra_args=[UNSAFE]) as servers:
        problems, acknowledged = mixed_writes(servers)
        stripped = proxy.stripped
    assert stripped > 0
    assert acknowledged > 0
    assert problems, "no lost commit detected behind a proxy that drops If-None-Match"
    print(f"{len(problems)} problem(s) detected, e.g.:\n" + "\n".join(problems[:5]))


def test_s3_ddb_root_loses_nothing_behind_the_same_proxy(
        s3: S3Endpoint, tmp_path: Path, code_under_test: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a DynamoDB commit table the store's conditional PUT is not needed for commits:
    the check passes (with a warning) and no acknowledged write is lost or duplicated,
    though the proxy still drops the header. Tags are the exception: Lance creates them
    with the store's conditional PUT, so a tag name created concurrently may be granted
    more than once there (docs/replicas.md)."""
    table = f"commits-{uuid.uuid4().hex[:8]}"
    s3.create_commit_table(table)
    root = s3.new_root("ddb").replace("s3://", "s3+ddb://", 1) + f"?ddbTableName={table}"
    monkeypatch.setattr(multiprocess, "CREATE_ROUNDS", 6)  # DynamoDB on moto is slower
    with Proxy(s3.url, strip_if_none_match=True) as proxy, \
            cluster(root, 3, tmp_path, env=s3.through(proxy.url).env()) as servers:
        problems, acknowledged = mixed_writes(servers, attempts=1)
        server_errors: list[str] = []
        ns = f"r{uuid.uuid4().hex[:10]}"
        with Api(servers[0], server_errors) as api:
            assert api.create_namespace(ns).status_code == 200
        multiprocess.test_racing_table_creates_have_one_winner(servers, ns, server_errors)
        assert proxy.counts["DYNAMODB"] > 0
        warned = all("ignores If-None-Match" in s.log_tail(200) for s in servers)
    assert acknowledged > 0
    assert warned, "the replicas did not warn that the store ignores If-None-Match"
    lost = [p for p in problems if "tag" not in p]
    assert lost == [], "\n".join(lost)
