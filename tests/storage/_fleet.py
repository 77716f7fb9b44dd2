"""Three ``nsframe serve`` replicas on one ``s3://`` root (moto's S3 on loopback) behind a
round-robin load balancer (tests/support/balancer.py): the deployment docs/operations.md
describes, for the tests of running nsframe as a fleet."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.balancer import Balancer
from tests.support.s3 import S3Endpoint

from ._servers import ServerProcess, cluster

REPLICAS = 3


@dataclass
class Fleet:
    root: str
    servers: list[ServerProcess]
    balancer: Balancer

    @property
    def url(self) -> str:
        """Where clients send requests: the balancer."""
        return self.balancer.url


@contextmanager
def fleet(s3: S3Endpoint, log_dir: Path, *, name: str = "fleet",
          extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None,
          ready_path: str | None = None, root_in_env: bool = False) -> Iterator[Fleet]:
    """`REPLICAS` servers on a fresh root of ``s3``'s bucket, the store's credentials in
    their environment (plus ``env``), behind a balancer that health-checks
    ``ready_path`` if given. ``root_in_env`` gives them the root as ``NSFRAME_ROOT``."""
    root = s3.new_root(name)
    with cluster(root, REPLICAS, log_dir, extra_args=extra_args,
                 env={**s3.env(), **(env or {})}, root_in_env=root_in_env) as servers, \
            Balancer([s.url for s in servers], ready_path=ready_path) as balancer:
        yield Fleet(root, servers, balancer)
