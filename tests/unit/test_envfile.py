"""``.env`` files: the format ``make run`` writes and ``kassa`` reads, and the precedence
(the process environment wins over the file)."""

from __future__ import annotations

import stat

import pytest

from kassa_common import envfile
from kassa_common.config import Settings
from kassa_dev.run import DEV_DEFAULTS, dev_settings

TEXT = """# a comment
DATABASE_URL=postgresql://postgres@127.0.0.1:5432/kassa
export LOCAL_EVM_RPC_URL = http://127.0.0.1:8545   # trailing comment
SINGLE='a # not a comment'
DOUBLE="say \\"hi\\"\\nbye"
EMPTY=
   INDENTED=yes
"""


def test_parse_reads_key_value_lines_comments_and_quotes():
    assert envfile.parse(TEXT) == {
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/kassa",
        "LOCAL_EVM_RPC_URL": "http://127.0.0.1:8545",
        "SINGLE": "a # not a comment",
        "DOUBLE": 'say "hi"\nbye',
        "EMPTY": "",
        "INDENTED": "yes",
    }


@pytest.mark.parametrize(
    "line, reason",
    [
        ("JUST TEXT", "not KEY=VALUE"),
        ("1KEY=x", "not KEY=VALUE"),
        ("KEY='open", "unterminated quote"),
        ('KEY="open', "unterminated quote"),
    ],
)
def test_parse_names_the_malformed_line(line, reason):
    with pytest.raises(ValueError, match=f"line 2: {reason}"):
        envfile.parse(f"OK=1\n{line}\n")


def test_render_reads_back_exactly():
    values = {"A": 'quote " backslash \\ newline \n hash # end', "B": "", "C": "plain"}
    assert envfile.parse(envfile.render(values)) == values


def test_the_environment_wins_over_the_file():
    environ = {"DATABASE_URL": "postgresql://elsewhere/db", "PATH": "/bin"}
    assert envfile.merged({"DATABASE_URL": "postgresql://file/db", "KASSA_ENV": "development"}, environ) == {
        "DATABASE_URL": "postgresql://elsewhere/db",
        "KASSA_ENV": "development",
        "PATH": "/bin",
    }


def test_load_adds_only_what_the_environment_does_not_set(tmp_path):
    path = tmp_path / ".env"
    path.write_text("DATABASE_URL=postgresql://file/db\nKASSA_ENV=development\nEMPTY_IN_ENV=from-file\n")
    environ = {"DATABASE_URL": "postgresql://env/db", "EMPTY_IN_ENV": ""}
    assert envfile.load(path, environ) == {"KASSA_ENV": "development"}
    assert environ == {"DATABASE_URL": "postgresql://env/db", "EMPTY_IN_ENV": "", "KASSA_ENV": "development"}
    assert Settings.from_env(environ).database_url == "postgresql://env/db"
    assert envfile.load(tmp_path / "missing", environ) == {}


def test_the_cli_reads_the_working_directory_unless_told_otherwise(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("KASSA_ENV=development\n")
    (tmp_path / "other.env").write_text("KASSA_ENV=production\nLOG_LEVEL=DEBUG\n")
    monkeypatch.chdir(tmp_path)
    assert envfile.load_working_directory({}) == {"KASSA_ENV": "development"}
    assert envfile.load_working_directory({"KASSA_ENV_FILE": "other.env"}) == {
        "KASSA_ENV": "production",
        "LOG_LEVEL": "DEBUG",
    }
    assert envfile.load_working_directory({"KASSA_ENV_FILE": ""}) == {}
    with pytest.raises(ValueError, match=r"\.env: line 1: not KEY=VALUE"):
        (tmp_path / ".env").write_text("nonsense\n")
        envfile.load_working_directory({})


def test_write_is_owner_only_and_replaces_the_file(tmp_path):
    path = tmp_path / ".env"
    path.write_text("OLD=1\n")
    path.chmod(0o644)
    envfile.write(path, {"NEW": "2"}, header="first line\nsecond line")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == '# first line\n# second line\nNEW="2"\n'


def test_make_run_writes_its_defaults_and_the_kassa_settings_of_the_environment():
    env = {
        **DEV_DEFAULTS,
        "PATH": "/bin",
        "HOME": "/root",
        "BIND": "0.0.0.0:1",
        "METRICS_PORT": "9100",
        "KASSA_ENV": "development",
        "BASE_RPC_URLS": "https://a,https://b",
        "SWEEP_MIN_USD": "5",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "DATABASE_URL": "postgresql://x/kassa",
    }
    values = dev_settings(env, Settings.from_env(env))
    assert {"PATH", "HOME", "BIND", "METRICS_PORT", "PYTHONUNBUFFERED"}.isdisjoint(values)
    assert values["DATABASE_URL"] == "postgresql://x/kassa"
    assert values["RABBITMQ_URL"] == Settings().rabbitmq_url
    for k in (
        "KASSA_ENV",
        "FIXED_RATES_ALLOW_LIVE",
        "WEBHOOK_ALLOW_PRIVATE_URLS",
        "LOCAL_EVM_RPC_URL",
        "SWEEPER_PRIVATE_KEY",
        "SWEEP_INTERVAL_SECONDS",
        "BASE_RPC_URLS",
        "SWEEP_MIN_USD",
        "REDIS_URL",
    ):
        assert values[k] == env[k], k
