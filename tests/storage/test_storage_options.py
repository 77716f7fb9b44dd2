"""Object-store roots and their options: where they come from, where they go, and that
their secrets show nowhere (reprs, log lines, error details)."""

from __future__ import annotations

import logging
from pathlib import Path

import lance
import pytest
import requests

import nsframe
from nsframe.server import ServerConfig, serve_in_thread
from nsframe.server._config_file import config_from_argv
from nsframe.server._storage import errors, redact
from nsframe.server._storage.location import StorageRoot
from tests.support import ARROW_HEADERS, ipc_stream
from tests.support.s3 import S3Endpoint

SECRET = "sEcReT-6f0e4d2b9a71"


@pytest.mark.parametrize(("root", "problem"), [
    ("s3://key:secret@bucket/p", "credentials"),
    ("s3://bucket/p?aws_secret_access_key=x", "query parameters"),
    ("s3+ddb://bucket/p", "ddbTableName"),
    ("s3+ddb://bucket/p?ddbTableName=", "ddbTableName"),
    ("ftp://bucket/p", "Unsupported"),
    ("s3:///p", "bucket"),
])
def test_root_uris_are_checked(root: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        StorageRoot.parse(root, environ={})


def test_roots_and_their_uris() -> None:
    local = StorageRoot.parse("some/folder", environ={})
    assert local.is_local and Path(local.uri).is_absolute()
    assert local.key_uri("tables/t.lance") == str(Path(local.uri, "tables/t.lance"))
    s3 = StorageRoot.parse("s3://bucket/prefix/", environ={})
    assert s3.uri == "s3://bucket/prefix"
    assert s3.key_uri("tables/t.lance") == "s3://bucket/prefix/tables/t.lance"
    ddb = StorageRoot.parse("s3+ddb://bucket/p?ddbTableName=commits", environ={})
    assert ddb.ddb_table == "commits" and ddb.store_url() == "s3://bucket/p"
    # Lance finds the commit table in the query of each table's URI.
    assert ddb.key_uri("tables/t.lance") == "s3+ddb://bucket/p/tables/t.lance?ddbTableName=commits"


def test_options_from_environment_then_config_file_then_flags(tmp_path: Path) -> None:
    config_file = tmp_path / "nsframe.toml"
    config_file.write_text(
        'root = "s3://bucket/prefix"\n'
        "read_consistency_interval = 2.5\n"
        "vend_storage_options = true\n"
        "[storage_options]\n"
        'aws_region = "file-region"\n'
        'aws_secret_access_key_env = "MY_SECRET"\n'
        "allow_http = true\n"
    )
    environ = {"AWS_REGION": "env-region", "AWS_ENDPOINT_URL": "http://env-endpoint:9000",
               "AWS_ACCESS_KEY_ID": "env-key", "MY_SECRET": SECRET}
    config = config_from_argv([
        "--config", str(config_file), "--storage-option", "aws_region=flag-region",
        "--storage-option", "aws_virtual_hosted_style_request=false",
        "--skip-conditional-put-check"], environ)
    assert config.root == "s3://bucket/prefix"
    assert config.read_consistency_interval == 2.5
    assert config.vend_storage_options and not config.check_conditional_put
    root = StorageRoot.parse(config.root, config.storage_options, environ=environ)
    assert dict(root.options) == {
        "aws_region": "flag-region",  # flag over file over environment
        "aws_endpoint": "http://env-endpoint:9000",
        "aws_access_key_id": "env-key",
        "aws_secret_access_key": SECRET,
        "allow_http": "true",
        "aws_virtual_hosted_style_request": "false",
    }
    store_config, client = root.obstore_options()
    assert client == {"allow_http": True}
    assert "allow_http" not in store_config and store_config["aws_region"] == "flag-region"


def test_bad_storage_flags_are_refused_without_echoing_them() -> None:
    with pytest.raises(ValueError, match="KEY=VALUE") as refused:
        config_from_argv(["s3://b/p", "--storage-option", SECRET], {})
    assert SECRET not in str(refused.value)


def test_secrets_show_in_no_repr_log_line_or_error_detail(
        caplog: pytest.LogCaptureFixture) -> None:
    config = ServerConfig(root="s3://bucket/p", storage_options={
        "aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": SECRET})
    shown = repr(config)
    assert SECRET not in shown and "aws_secret_access_key" in shown
    root = StorageRoot.parse(config.root, config.storage_options, environ={})
    assert SECRET not in repr(root)
    redact.install("nsframe.server")  # as create_app does
    with caplog.at_level(logging.ERROR, logger="nsframe.server"):
        # A store's message that quotes the secret and the location reaches no client...
        failure = OSError(f"Generic S3 error: PUT s3://bucket/p/tables/x.lance by {SECRET}")
        detail = errors.translate(failure).detail
        assert SECRET not in detail and "s3://" not in detail
        # ... nor a log line, message or traceback.
        errors.unexpected(RuntimeError(f"boom {SECRET}"), "in a test")
        try:
            raise ValueError(f"inner {SECRET}")
        except ValueError:
            logging.getLogger("nsframe.server").exception("failed with %s", SECRET)
    assert caplog.records
    text = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert SECRET not in text and redact.MASK in text


def test_describe_vends_storage_options_only_when_asked(s3: S3Endpoint) -> None:
    for vend in (False, True):
        root = s3.new_root("vend")
        with serve_in_thread(root, storage_options=s3.options(),
                             vend_storage_options=vend) as server:
            assert requests.post(f"{server.url}/v1/namespace/n/create", json={}).ok
            created = requests.post(f"{server.url}/v1/table/n$t/create",
                                    data=ipc_stream({"id": [1, 2, 3]}),
                                    headers=ARROW_HEADERS)
            assert created.status_code == 200, created.text
            answer = requests.post(f"{server.url}/v1/table/n$t/describe", json={})
            assert answer.status_code == 200, answer.text
            described = answer.json()
            assert described["location"].startswith(root + "/tables/")
            if not vend:
                assert "storage_options" not in described
                assert s3.secret_key not in str(described)
                continue
            assert described["storage_options"] == s3.options()
            with nsframe.connect(server.url) as conn:
                location = conn.table("n$t").location
            assert location == described["location"]
            ds = lance.dataset(location, storage_options=described["storage_options"])
            assert ds.count_rows() == 3
