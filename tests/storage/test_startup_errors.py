"""A root the server cannot use stops `nsframe serve` with one or two readable lines: which
root or bucket, what is wrong (no such bucket or DynamoDB table, credentials refused, an
endpoint that does not answer) and what to check. Real `nsframe serve` processes against
moto on loopback; for the credentials, a moto server of its own that checks them.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support.s3 import S3Endpoint, free_port, moto_server

from ._servers import REPO, ServerProcess

# Fragments of a store's raw answer that must not reach the operator.
RAW = ("<?xml", "<Error>", "Debug source", "RetryError", "Traceback", "HostId")


def serve(root: str, env: Mapping[str, str], tmp_path: Path) -> tuple[int, list[str]]:
    """Start `nsframe serve ROOT`; its exit status and the lines it printed."""
    probe = ServerProcess(root, tmp_path, "refused", env=env)
    done = subprocess.run([sys.executable, "-m", "nsframe._cli", "serve", root,
                           "--port", str(free_port())],
                          env=probe.environment(), cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, [line for line in done.stderr.splitlines() if line.strip()]


def readable(status: int, lines: list[str], secret: str) -> str:
    assert status == 2, "\n".join(lines)
    assert 1 <= len(lines) <= 2, "\n".join(lines)
    text = "\n".join(lines)
    assert not [raw for raw in RAW if raw in text], text
    assert secret not in text
    return text


def test_a_missing_bucket(s3: S3Endpoint, tmp_path: Path, code_under_test: Path) -> None:
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    status, lines = serve(f"s3://{bucket}/data", s3.env(), tmp_path)
    text = readable(status, lines, s3.secret_key)
    assert f"s3://{bucket}/data" in text
    assert f"bucket {bucket!r} does not exist" in text
    assert "Create it" in text and s3.url in text  # the endpoint asked


def test_a_missing_dynamodb_table(s3: S3Endpoint, tmp_path: Path,
                                  code_under_test: Path) -> None:
    root = s3.new_root("ddb").replace("s3://", "s3+ddb://", 1) + "?ddbTableName=nowhere"
    status, lines = serve(root, s3.env(), tmp_path)
    text = readable(status, lines, s3.secret_key)
    assert "DynamoDB table 'nowhere' does not exist" in text
    assert "dynamodb_endpoint" in text and "docs/replicas.md" in text


def test_an_endpoint_that_does_not_answer(s3: S3Endpoint, tmp_path: Path,
                                          code_under_test: Path) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    status, lines = serve(s3.new_root("gone"), {**s3.env(), "AWS_ENDPOINT_URL": nobody},
                          tmp_path)
    text = readable(status, lines, s3.secret_key)
    assert f"{nobody} does not answer" in text
    assert "aws_endpoint" in text and "AWS_ENDPOINT_URL" in text


def test_credentials_the_store_refuses(tmp_path: Path, code_under_test: Path) -> None:
    # moto answers the bucket's creation, then refuses every access key it does not know:
    # the test's keys are none of its IAM users'.
    with moto_server(tmp_path / "moto", check_credentials_after=1) as url:
        store = S3Endpoint(url, f"locked-{uuid.uuid4().hex[:8]}")
        store.create_bucket()
        status, lines = serve(store.new_root("locked"), store.env(), tmp_path)
    text = readable(status, lines, store.secret_key)
    assert f"s3://{store.bucket}/" in text
    assert "refused the credentials" in text and "InvalidAccessKeyId" in text
    assert "AWS_ACCESS_KEY_ID" in text and "aws_access_key_id" in text


@pytest.mark.parametrize("flag", [["--skip-conditional-put-check"]])
def test_without_the_probe_the_first_access_says_the_same(
        s3: S3Endpoint, tmp_path: Path, code_under_test: Path, flag: list[str]) -> None:
    """Without the start-up probe, the first use of the store (the server's record)
    meets the missing bucket, and says so the same way."""
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    probe = ServerProcess(f"s3://{bucket}/data", tmp_path, "skip", env=s3.env())
    done = subprocess.run([sys.executable, "-m", "nsframe._cli", "serve", probe.root,
                           "--port", str(free_port()), *flag],
                          env=probe.environment(), cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    text = readable(done.returncode, lines, s3.secret_key)
    assert f"bucket {bucket!r} does not exist" in text
