"""Three ``nsframe serve`` replicas over one ``s3://`` root (moto on loopback).

The multi-process checks of ``test_multiprocess.py`` run here unchanged, with clients
spread over three replicas instead of two servers on a local folder: concurrent mixed
writes, racing creates, first inserts into a declared table, a drop during inserts, a
drop and re-create across replicas. Each must end with nothing lost, nothing
duplicated and no 5xx. The replicas take their credentials and endpoint from the
standard ``AWS_*`` environment variables, as a deployment would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.s3 import S3Endpoint

from ._servers import ServerProcess, cluster, kept_running
from .test_multiprocess import (
    test_drop_during_inserts_stays_dropped as test_drop_during_inserts_on_replicas,
)
from .test_multiprocess import (
    test_first_inserts_into_a_declared_table_both_land as test_first_inserts_on_replicas,
)
from .test_multiprocess import (
    test_mixed_writes_on_two_servers_lose_nothing as test_mixed_writes_on_replicas,
)
from .test_multiprocess import (
    test_racing_namespace_creates_have_one_winner as test_namespace_create_race_on_replicas,
)
from .test_multiprocess import (
    test_racing_table_creates_have_one_winner as test_table_create_race_on_replicas,
)
from .test_multiprocess import (
    test_recreated_table_is_never_read_as_the_old_one as test_recreate_across_replicas,
)

# moto answers in milliseconds, but every request is several of them: more time per test.
pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]
REPLICAS = 3

# Listed so that the imports count as used: pytest collects them here, with the fixtures
# of this module.
__all__ = [
    "test_drop_during_inserts_on_replicas",
    "test_first_inserts_on_replicas",
    "test_mixed_writes_on_replicas",
    "test_namespace_create_race_on_replicas",
    "test_recreate_across_replicas",
    "test_table_create_race_on_replicas",
]


@pytest.fixture(scope="module")
def replicas(s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory,
             code_under_test: Path) -> Iterator[list[ServerProcess]]:
    """Three servers on one s3:// root, configured by the environment alone."""
    root = s3.new_root("replicas")
    with cluster(root, REPLICAS, tmp_path_factory.mktemp("replica-logs"),
                 env=s3.env()) as started:
        yield started


@pytest.fixture
def servers(replicas: list[ServerProcess]) -> Iterator[list[ServerProcess]]:
    """The replicas, all running; they must all still run after the test."""
    yield from kept_running(replicas)


def test_replica_logs_hold_no_secret(replicas: list[ServerProcess], s3: S3Endpoint) -> None:
    """Whatever the replicas logged while the tests above ran, credentials included in
    their environment never appear in it (run last: after the other tests' requests)."""
    for server in replicas:
        log = server.log_tail(10**7)
        assert "nsframe: serving s3://" in log
        assert s3.secret_key not in log, f"{server.name} logged the secret key"
