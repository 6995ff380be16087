"""The Procfile is Kassa's one process registry.

``make run`` starts every process it lists, the test stack starts them as real
processes, and a test holds docker-compose.yml to the same names and commands. Reading
it lives here, in the development tooling, because only tooling and tests need it: in
production a process manager (compose, systemd, Kubernetes) runs the commands itself.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    name: str
    command: str

    @property
    def argv(self) -> list[str]:
        """The command as an argument list (what compose's exec form holds)."""
        return shlex.split(self.command)


def read(path: str | os.PathLike[str]) -> list[Process]:
    """Every ``name: command`` line, in order; blank lines and ``#`` comments skipped."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, command = line.partition(":")
        if not sep or not name.strip() or not command.strip():
            raise ValueError(f"{path}:{number}: expected 'name: command', got {line!r}")
        out.append(Process(name.strip(), command.strip()))
    return out


def with_this_python(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this interpreter's bin directory first on PATH.

    The Procfile says ``python`` and ``gunicorn``; run from a virtualenv, they must be
    that virtualenv's, whatever the caller's PATH says.
    """
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
