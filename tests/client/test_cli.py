"""`nsframe serve`: safe defaults, credentials from flags, environment and config file."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from tests.support import ARROW_HEADERS, assert_error, ipc_stream

KEY = "cli-" + secrets.token_hex(16)
READ_KEY = "cli-read-" + secrets.token_hex(16)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NSFRAME_API_KEYS"}
    return {**env, **extra}


def serve_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "nsframe._cli", "serve", *args]


def run(args: Sequence[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(serve_cmd(*args), env=env or clean_env(), capture_output=True,
                          text=True, timeout=60)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(args: Sequence[str], env: dict[str, str],
            cwd: Path | None = None) -> Iterator[tuple[str, list[str]]]:
    """A real `nsframe serve` process; yields its URL and, after exit, its stderr lines."""
    port = free_port()
    proc = subprocess.Popen(serve_cmd(*args, "--port", str(port)), env=env, cwd=cwd,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}"
    output: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{url}/v1/tables", timeout=1)
                break
            except requests.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("nsframe serve did not start") from None
                time.sleep(0.1)
        yield url, output
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        output.extend(err.splitlines())


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.test"])
def test_refuses_public_bind_without_credentials(tmp_path: Path, host: str) -> None:
    result = run([str(tmp_path / "data"), "--host", host])
    assert result.returncode == 2
    assert f"refusing to bind {host}" in result.stderr
    assert "--api-key" in result.stderr and "NSFRAME_API_KEYS" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--database", "no-equals-sign"], "NAME=PATH"),
        (["--max-json-bytes", "huge"], "not a size"),
        (["--config", "missing.toml"], "missing.toml"),
        (["--graceful-timeout", "-1"], "--graceful-timeout: give a number at least 0"),
        (["--drain-delay", "nan"], "--drain-delay: give a number at least 0"),
    ],
)
def test_bad_flags_exit_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    result = run([str(tmp_path), *args])
    assert result.returncode == 2
    assert message in result.stderr


def test_bad_config_file_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "nsframe.toml"
    config.write_text('[[api_keys]]\nkey = "k"\nread_olny = true\n')
    result = run(["--config", str(config)])
    assert result.returncode == 2 and "read_olny" in result.stderr
    config.write_text('[jwt]\nsecret = "short"\naudience = "x"\n')
    result = run(["--config", str(config)])
    assert result.returncode == 2 and "at least 32 bytes" in result.stderr


def test_keys_from_environment_and_flag(tmp_path: Path) -> None:
    env = clean_env(NSFRAME_API_KEYS=f" {KEY} , other-{KEY} ")
    flag_key = f"flag-{KEY}"
    with running([str(tmp_path), "--api-key", flag_key], env) as (url, output):
        assert_error(requests.post(f"{url}/v1/namespace/a/create", json={}), 401, 16)
        for key in (KEY, f"other-{KEY}", flag_key):
            resp = requests.post(f"{url}/v1/namespace/$/list", headers={"x-api-key": key})
            assert resp.status_code == 200, resp.text
        resp = requests.post(f"{url}/v1/namespace/a/create", json={}, headers={"x-api-key": KEY})
        assert resp.status_code == 200
        # Credentials are never read from the URL, even a valid key.
        assert_url_credentials_refused(url, KEY)
    log = "\n".join(output)
    assert "credentials required" in log
    assert "POST /v1/namespace/a/create 401" in log and "POST /v1/namespace/a/create 200" in log
    assert KEY not in log


URL_CREDENTIAL_PARAMS = ("api_key", "api-key", "x-api-key", "apikey", "key", "token",
                         "access_token", "auth_token", "bearer")


def assert_url_credentials_refused(url: str, valid_key: str) -> None:
    """A request whose only credential is in the query string gets 401 and does nothing."""
    for param in URL_CREDENTIAL_PARAMS:
        for method, path in (("POST", "/v1/namespace/url-made/create"),
                             ("GET", "/v1/namespace/$/list"), ("GET", "/v1/tables")):
            resp = requests.request(method, f"{url}{path}", params={param: valid_key},
                                    json={} if method == "POST" else None)
            body = assert_error(resp, 401, 16)
            assert body["type"] == "/errors/unauthorized-request", (param, path)
            assert valid_key not in resp.text
    # Bearer in the query string, in the form of a header value, is no credential either.
    resp = requests.get(f"{url}/v1/tables", params={"Authorization": f"Bearer {valid_key}"})
    assert_error(resp, 401, 16)
    resp = requests.post(f"{url}/v1/namespace/url-made/exists", json={},
                         headers={"x-api-key": valid_key})
    assert_error(resp, 404)  # the creates above made nothing


def test_api_key_flag_is_repeatable(tmp_path: Path) -> None:
    first, second, third = (f"{n}-{KEY}" for n in ("one", "two", "three"))
    args = [str(tmp_path), "--api-key", first, "--api-key", second]
    with running(args, clean_env()) as (url, output):
        for number, key in enumerate((first, second), start=1):
            resp = requests.post(f"{url}/v1/namespace/by{number}/create", json={},
                                 headers={"x-api-key": key})
            assert resp.status_code == 200, resp.text
        for headers in ({"x-api-key": third}, {}, {"x-api-key": f"{first},{second}"},
                        {"x-api-key": first[:-1]}):
            resp = requests.post(f"{url}/v1/namespace/by3/create", json={}, headers=headers)
            assert_error(resp, 401, 16)
        listed = requests.get(f"{url}/v1/namespace/$/list", headers={"x-api-key": second})
        assert sorted(listed.json()["namespaces"]) == ["by1", "by2"]
        assert_url_credentials_refused(url, first)
    log = "\n".join(output)
    assert "credentials required" in log
    for key in (first, second, third):
        assert key not in log


def test_config_file_scopes_databases_and_limits(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    config = tmp_path / "config" / "nsframe.toml"
    config.write_text(
        'root = "../main"\n'
        "max_json_bytes = \"2KiB\"\n"
        'allow_hosts = ["*.example.test"]\n'
        "[limits]\n"
        "max_k = 50\n"
        "[databases]\n"
        'sales = "../sales"\n'
        "[[api_keys]]\n"
        'key_env = "ADMIN_KEY"\n'
        'name = "admin"\n'
        "[[api_keys]]\n"
        f'key = "{READ_KEY}"\n'
        "read_only = true\n"
    )
    env = clean_env(ADMIN_KEY=KEY)
    with running(["--config", str(config), "--database-from-host"], env) as (url, _):
        admin, reader = {"x-api-key": KEY}, {"x-api-key": READ_KEY}
        resp = requests.post(f"{url}/v1/namespace/q/create", json={},
                             headers={**admin, "x-service-database": "sales"})
        assert resp.status_code == 200, resp.text
        resp = requests.post(f"{url}/v1/namespace/r/create", json={},
                             headers={**admin, "Host": "sales.example.test"})
        assert resp.status_code == 200, resp.text
        entries = ("_catalog", "root", "ns")  # docs/storage.md
        assert (tmp_path.joinpath("sales", *entries, "q")).is_dir()
        assert (tmp_path.joinpath("sales", *entries, "r")).is_dir()
        assert not (tmp_path.joinpath("main", *entries, "q")).exists()
        resp = requests.post(f"{url}/v1/namespace/q/exists", json={},
                             headers={**reader, "x-service-database": "sales"})
        assert resp.status_code == 200
        assert_error(requests.post(f"{url}/v1/namespace/s/create", json={}, headers=reader),
                     403, 15)
        resp = requests.post(f"{url}/v1/namespace/big/create", headers=admin,
                             json={"properties": {"b": "x" * 4000}})
        assert_error(resp, 413)
        # A host name not allowed is refused; the [limits] table is read.
        resp = requests.post(f"{url}/v1/namespace/r/exists", json={},
                             headers={**admin, "Host": "sales.elsewhere.test"})
        assert "--allow-host" in assert_error(resp, 400, 13)["detail"]
        # (on a table that exists: a missing one is the 404 before any 400)
        assert requests.post(f"{url}/v1/namespace/q/create", headers=admin,
                             json={}).status_code == 200
        made = requests.post(f"{url}/v1/table/q$t/create", headers={**admin, **ARROW_HEADERS},
                             data=ipc_stream(pa.table({"v": pa.array([[1.0]],
                                                                     pa.list_(pa.float32(), 1))})))
        assert made.status_code == 200, made.text
        resp = requests.post(f"{url}/v1/table/q$t/query", headers=admin,
                             json={"vector": [1.0], "k": 51})
        assert "max_k" in assert_error(resp, 400, 13)["detail"]


def test_max_flags_override_defaults(tmp_path: Path) -> None:
    with running([str(tmp_path), "--max-json-bytes", "1KiB", "--max-body-bytes", "10KiB"],
                 clean_env()) as (url, output):
        resp = requests.post(f"{url}/v1/namespace/big/create",
                             json={"properties": {"b": "x" * 2000}})
        assert "1024" in assert_error(resp, 413)["detail"]
        resp = requests.post(f"{url}/v1/table/t/create", data=b"\0" * 20_000,
                             headers={"Content-Type": "application/vnd.apache.arrow.stream"})
        assert "10240" in assert_error(resp, 413)["detail"]
    assert any("open, no credentials" in line for line in output)


def test_defaults_are_the_local_folder_and_port_2333(tmp_path: Path) -> None:
    from nsframe.server._config_file import config_from_argv

    config = config_from_argv([], {})
    assert (config.root, config.host, config.port) == ("./nsframe-data", "127.0.0.1", 2333)
    # No ROOT: the data goes to ./nsframe-data of the working directory, nowhere else.
    with running([], clean_env(), cwd=tmp_path) as (url, _):
        assert requests.post(f"{url}/v1/namespace/shop/create", json={}).status_code == 200
    assert (tmp_path / "nsframe-data").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["nsframe-data"]
    assert "shop" in {p.name for p in (tmp_path / "nsframe-data").rglob("*")}
