"""Every server setting from one declaration: reachable as a flag, an ``NSFRAME_*``
variable and a config file key; precedence flag > environment > file > default;
secrets masked in ``--print-config``; the docs' table generated from the declaration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsframe.server._config import ServerConfig
from nsframe.server._config_file import (
    SETTINGS,
    config_from_argv,
    replace_table,
    settings_table,
)
from nsframe.server._settings import (
    Credentials,
    Flag,
    Names,
    Number,
    Pairs,
    Setting,
    Size,
    Table,
    Text,
)

REPO = Path(__file__).resolve().parents[2]
SECRET_KEY = "settings-test-key-8d1f0c2b9a"
SECRET_TOKEN = "settings-test-token-3e7a5b6c1d"
JWT_SECRET = "settings-test-jwt-secret-0123456789abcdef"
STORE_SECRET = "settings-test-store-secret-77aa99"


def sample(item: Setting) -> tuple[str, str, Any]:
    """A value other than the default: as text (flag, variable), as TOML, as expected."""
    kind = item.kind
    default = getattr(ServerConfig().limits if item.group else ServerConfig(), item.field)
    if isinstance(kind, Flag):
        return ("false", "false", False) if default else ("true", "true", True)
    if isinstance(kind, Number):
        value = kind.kind(kind.minimum + 3)
        return str(value), str(value), value
    if isinstance(kind, Size):
        return "3KiB", '"3KiB"', 3072
    if isinstance(kind, Text):
        text = next(c for c in kind.choices if c != default) if kind.choices else "/srv/x"
        return text, json.dumps(text), text
    if isinstance(kind, Names):
        return "a.example", '["a.example"]', ["a.example"]
    if isinstance(kind, Pairs):
        return "n=/srv/n", '{n = "/srv/n"}', {"n": "/srv/n"}
    if isinstance(kind, Credentials):
        return SECRET_KEY, f'[{{{kind.member} = "{SECRET_KEY}"}}]', {SECRET_KEY: {}}
    if isinstance(kind, Table):
        value = {"audience": "a", "secret": JWT_SECRET}
        return json.dumps(value), f'{{audience = "a", secret = "{JWT_SECRET}"}}', value
    raise AssertionError(f"add a sample for {type(kind).__name__} (setting {item.name})")


def value_of(config: ServerConfig, item: Setting) -> Any:
    return getattr(config.limits if item.group else config, item.field)


def matches(found: Any, expected: Any) -> bool:
    """The expected value, within what other settings add (the bound host is always an
    allowed host; a key gets a name for the log)."""
    if isinstance(expected, list):
        return all(v in found for v in expected)
    if isinstance(expected, dict):
        return found is not None and all(k in found and (v == {} or found[k] == v)
                                         for k, v in expected.items())
    return bool(found == expected)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_setting_is_reachable_by_flag_environment_and_file(
        name: str, tmp_path: Path) -> None:
    item = SETTINGS[name]
    text, toml, expected = sample(item)
    assert not matches(value_of(ServerConfig(), item), expected)
    flag = ([item.option if expected else "--no-" + item.option[2:]]
            if item.kind.boolean else [item.option, text])
    by_flag = config_from_argv(flag, {})
    by_env = config_from_argv([], {item.env: text})
    assert item.env == "NSFRAME_" + name.upper()
    file = tmp_path / "nsframe.toml"
    file.write_text(f"[limits]\n{name} = {toml}\n" if item.group else f"{name} = {toml}\n")
    by_file = config_from_argv(["--config", str(file)], {})
    for source, config in (("flag", by_flag), ("env", by_env), ("file", by_file)):
        assert matches(value_of(config, item), expected), (source, value_of(config, item))


def test_precedence_is_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    file = tmp_path / "conf" / "nsframe.toml"
    file.parent.mkdir()
    file.write_text('root = "file-root"\nport = 1111\n'
                    "[limits]\nmax_k = 11\nquery_timeout = 11\n")
    env = {"NSFRAME_PORT": "2222", "NSFRAME_MAX_K": "22", "NSFRAME_QUERY_TIMEOUT": "22"}
    origins: dict[str, str] = {}
    config = config_from_argv(["--config", str(file), "--query-timeout", "33"], env, origins)
    assert config.root == str(file.parent.resolve() / "file-root")  # relative to the file
    assert config.port == 2222 and config.limits.max_k == 22
    assert config.limits.query_timeout == 33.0
    assert config.limits.max_page_size == 1000 and config.workers == 1  # defaults
    assert origins["root"] == "file" and origins["port"] == "env NSFRAME_PORT"
    assert origins["query_timeout"] == "flag --query-timeout" and "workers" not in origins
    # ROOT on the command line beats NSFRAME_ROOT, which beats the file.
    assert config_from_argv(["--config", str(file)], {"NSFRAME_ROOT": "s3://b/e"}).root \
        == "s3://b/e"
    assert config_from_argv(["/data/flag"], {"NSFRAME_ROOT": "s3://b/e"}).root == "/data/flag"
    with pytest.raises(ValueError, match="give the root once"):
        config_from_argv(["/a", "--root", "/b"], {})


def test_lists_and_tables_add_up_and_a_scoped_key_keeps_its_scope(tmp_path: Path) -> None:
    file = tmp_path / "nsframe.toml"
    file.write_text(f'[[api_keys]]\nkey = "{SECRET_KEY}"\nread_only = true\nname = "ro"\n'
                    '[storage_options]\naws_region = "file-region"\nallow_http = true\n')
    env = {"NSFRAME_API_KEYS": f"{SECRET_KEY},env-key-000000000000",
           "NSFRAME_STORAGE_OPTIONS": "aws_region=env-region,aws_endpoint=http://e:9000"}
    config = config_from_argv(["--config", str(file), "--api-key", "flag-key-0000000000",
                               "--storage-option", "aws_region=flag-region"], env)
    assert config.api_keys[SECRET_KEY] == {"read_only": True, "name": "ro"}  # not widened
    assert set(config.api_keys) == {SECRET_KEY, "env-key-000000000000", "flag-key-0000000000"}
    assert config.storage_options == {"aws_region": "flag-region", "allow_http": "true",
                                      "aws_endpoint": "http://e:9000"}


@pytest.mark.parametrize(("env", "message"), [
    ({"NSFRAME_PORT": "eighty"}, "NSFRAME_PORT: give a whole number at least 0"),
    ({"NSFRAME_WORKERS": "0"}, "NSFRAME_WORKERS: give a whole number at least 1"),
    ({"NSFRAME_MAX_K": "-1"}, "NSFRAME_MAX_K: give a whole number above 0"),
    ({"NSFRAME_VEND_STORAGE_OPTIONS": "yes please"}, "NSFRAME_VEND_STORAGE_OPTIONS: give "
                                                     "true or false"),
    ({"NSFRAME_MAX_JSON_BYTES": "lots"}, "NSFRAME_MAX_JSON_BYTES: 'lots' is not a size"),
    ({"NSFRAME_LOG_LEVEL": "loud"}, "NSFRAME_LOG_LEVEL: give one of critical"),
    ({"NSFRAME_JWT": "audience=x"}, "NSFRAME_JWT: give a JSON object"),
])
def test_a_bad_variable_is_named_with_what_to_fix(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config_from_argv([], env)


def test_a_bad_file_key_is_named_with_what_to_fix(tmp_path: Path) -> None:
    file = tmp_path / "nsframe.toml"
    for text, message in (
            ("prot = 80\n", r"unknown setting\(s\) \['prot'\]; known: .*port"),
            ("port = \"80\"\n", "nsframe.toml: port: give a whole number"),
            ("[limits]\nmax_kk = 3\n", r"\[limits\]: unknown limit\(s\) \['max_kk'\]"),
            ("[limits]\nmax_k = 0\n", r"\[limits\] max_k: give a whole number above 0"),
            ("[[api_keys]]\nkey_env = \"NOT_SET_ANYWHERE\"\n",
             "api_keys: entry #1: the variable NOT_SET_ANYWHERE is not set")):
        file.write_text(text)
        with pytest.raises(ValueError, match=message):
            config_from_argv(["--config", str(file)], {})


def test_print_config_masks_every_secret_and_exits_0(tmp_path: Path) -> None:
    file = tmp_path / "nsframe.toml"
    file.write_text(f'[[tokens]]\ntoken = "{SECRET_TOKEN}"\nname = "ci"\n'
                    f'[jwt]\nsecret = "{JWT_SECRET}"\naudience = "nsframe"\n'
                    '[storage_options]\naws_secret_access_key_env = "STORE_SECRET"\n'
                    'aws_region = "eu-west-1"\n')
    env = {**os.environ, "NSFRAME_API_KEYS": SECRET_KEY, "STORE_SECRET": STORE_SECRET,
           "NSFRAME_ROOT": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "nsframe._cli", "serve", "--config", str(file),
         "--print-config", "--storage-option", f"aws_session_token={STORE_SECRET}x",
         "--max-k", "7"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for secret in (SECRET_KEY, SECRET_TOKEN, JWT_SECRET, STORE_SECRET):
        assert secret not in out and secret not in result.stderr
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert '"<masked> (ci)"' in lines["tokens"] and "<masked>" in lines["api_keys"]
    assert '"audience" = "nsframe"' in lines["jwt"] and '"secret" = "<masked>"' in lines["jwt"]
    assert '"aws_region" = "eu-west-1"' in lines["storage_options"]
    assert '"aws_secret_access_key" = "<masked>"' in lines["storage_options"]
    assert lines["limits.max_k"].startswith("limits.max_k = 7 ")
    assert lines["limits.max_k"].endswith("# flag --max-k")
    assert lines["storage_options"].endswith("# file + flag --storage-option")
    assert not (tmp_path / "data").exists()  # it printed, and served nothing


def test_the_docs_table_of_settings_is_the_generated_one() -> None:
    page = (REPO / "docs" / "operations.md").read_text("utf-8")
    assert replace_table(page) == page, (
        "docs/operations.md's settings table is stale: run "
        "`python -m nsframe.server._config_file docs/operations.md`")
    for item in SETTINGS.values():
        assert f"`{item.env}`" in settings_table()


def test_the_python_api_keeps_its_keywords_and_masks_its_repr() -> None:
    config = ServerConfig(root="/srv/data", api_keys=[SECRET_KEY],
                          storage_options={"aws_secret_access_key": STORE_SECRET},
                          limits={"max_k": 5})  # type: ignore[arg-type]
    assert config.limits.max_k == 5 and config.api_keys == {SECRET_KEY: {}}
    shown = repr(config)
    assert SECRET_KEY not in shown and STORE_SECRET not in shown
    assert "api_keys=<1 configured>" in shown and "root='/srv/data'" in shown
    with pytest.raises(ValueError, match="read_consistency_interval: give a number at least 0"):
        ServerConfig(read_consistency_interval=-1)


def test_the_variables_keep_the_existing_names_and_clash_with_no_other() -> None:
    from nsframe._protocol import defaults
    from nsframe.embeddings import _trust
    from nsframe.server._storage import leases

    variables = {item.env for item in SETTINGS.values()}
    assert SETTINGS["api_keys"].env == defaults.API_KEYS_ENV  # NSFRAME_API_KEYS, as before
    others = {defaults.URL_ENV, defaults.API_KEY_ENV, defaults.TOKEN_ENV, leases.LEASE_ENV,
              _trust.ENDPOINTS_ENV, _trust.MODELS_ENV, _trust.REMOTE_CODE_ENV}
    assert variables.isdisjoint(others)
    assert len(variables) == len(SETTINGS)
