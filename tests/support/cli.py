"""The ``kassa`` command run in-process, as an operator types it."""

from __future__ import annotations

from kassa_common import cli


def cli_runner(monkeypatch, capsys, env: dict[str, str]):
    """``run(*args)`` runs ``kassa ARGS`` with ``env`` set; it returns (exit code, stdout, stderr)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
