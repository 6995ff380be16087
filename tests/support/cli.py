"""The ``kassa`` command as an operator types it: the console script run as a subprocess
against the test database (the fixture ``kassa``), or its entry point run in-process.

The fixtures are imported by the test modules that use them::

    from tests.support.cli import kassa, kassa_main  # noqa: F401  (fixtures)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kassa_common import cli

KASSA = Path(sys.executable).with_name("kassa")


def cli_runner(monkeypatch, capsys, env: dict[str, str]):
    """``run(*args)`` runs ``kassa ARGS`` with ``env`` set; it returns (exit code, stdout, stderr)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def run_kassa(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``kassa ARGS`` as a subprocess with ``env`` over this process's environment, on a
    development stack (``KASSA_ENV=development``, like `make run`); the completed process."""
    env = {**os.environ, "KASSA_ENV": "development", **env}
    return subprocess.run([str(KASSA), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def kassa(database_url):
    """Run the console script; returns the completed process (asserts success unless ok=False)."""

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = run_kassa({"DATABASE_URL": database_url}, *args)
        if ok:
            assert done.returncode == 0, f"kassa {' '.join(args)}: {done.stderr}"
        return done

    return run


@pytest.fixture
def kassa_main(database_url, monkeypatch, capsys):
    """The same entry point in-process: returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("KASSA_ENV", "development")

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
