"""The real ``kassa`` console script in a directory holding a ``.env`` (as ``make run`` leaves
one in the checkout): it takes its settings from the file, and the environment wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kassa_common import envfile

KASSA = Path(sys.executable).with_name("kassa")
PUBLISHED_XPUB = (
    "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"
)
NOWHERE = "postgresql://postgres@127.0.0.1:1/nowhere"


@pytest.fixture
def second_terminal(tmp_path):
    """Run ``kassa`` in ``tmp_path`` with a user's environment: no Kassa setting but ``extra``."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(KASSA), "--json", *args],
            cwd=tmp_path,
            env={**base, **extra},
            capture_output=True,
            check=False,
            text=True,
            timeout=60,
        )

    return run


def test_the_cli_takes_its_settings_from_dot_env(tmp_path, second_terminal, database_url, sessions):
    envfile.write(tmp_path / ".env", {"DATABASE_URL": database_url, "KASSA_ENV": "development"})
    email = f"env-{os.urandom(4).hex()}@example.com"
    done = second_terminal(
        "merchant", "create", "--email", email, "--password", "correct horse", "--business-name", "Acme", "--activate"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["email"] == email
    # KASSA_ENV=development from the file: a published key is taken for live mode, with a warning
    done = second_terminal(
        "wallet", "set", "--email", email, "--mode", "live", "--chain", "evm", "--xpub", PUBLISHED_XPUB
    )
    assert done.returncode == 0, done.stderr
    assert "published" in json.loads(done.stdout)["warning"]


def test_the_environment_wins_over_dot_env(tmp_path, second_terminal, database_url, sessions):
    envfile.write(tmp_path / ".env", {"DATABASE_URL": NOWHERE, "KASSA_ENV": "development"})
    email = f"env-{os.urandom(4).hex()}@example.com"
    args = ("merchant", "create", "--email", email, "--password", "correct horse", "--business-name", "Acme")
    failed = second_terminal(*args)
    assert failed.returncode == 1 and "database error" in json.loads(failed.stderr)["error"]
    done = second_terminal(*args, DATABASE_URL=database_url)
    assert done.returncode == 0, done.stderr
    # the file's KASSA_ENV=development loses to the environment's production: the published key is refused
    refused = second_terminal(
        "wallet",
        "set",
        "--email",
        email,
        "--mode",
        "live",
        "--chain",
        "evm",
        "--xpub",
        PUBLISHED_XPUB,
        DATABASE_URL=database_url,
        KASSA_ENV="production",
    )
    assert refused.returncode == 1 and "published" in json.loads(refused.stderr)["error"]
    # KASSA_ENV_FILE="" reads no file at all: KASSA_ENV is production by default, the key refused
    ignored = second_terminal(
        "wallet",
        "set",
        "--email",
        email,
        "--mode",
        "live",
        "--chain",
        "evm",
        "--xpub",
        PUBLISHED_XPUB,
        DATABASE_URL=database_url,
        KASSA_ENV_FILE="",
    )
    assert ignored.returncode == 1 and "published" in json.loads(ignored.stderr)["error"]
    taken = second_terminal(
        "wallet",
        "set",
        "--email",
        email,
        "--mode",
        "live",
        "--chain",
        "evm",
        "--xpub",
        PUBLISHED_XPUB,
        DATABASE_URL=database_url,
    )
    assert taken.returncode == 0, taken.stderr


def test_a_malformed_dot_env_is_named(tmp_path, second_terminal):
    (tmp_path / ".env").write_text("DATABASE_URL=x\nnot a setting\n")
    done = second_terminal("db", "upgrade")
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"] == ".env: line 2: not KEY=VALUE"
