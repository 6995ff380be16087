"""``.env`` files: ``make run`` writes the development settings it gives its processes to
``.env`` in the checkout, and the ``kassa`` command reads ``.env`` from the working
directory at start, the process environment winning over the file. So a command run in a
second terminal sees the settings of the stack that ``make run`` started.

The format is the common subset: ``KEY=VALUE`` lines (an optional leading ``export``),
blank lines and ``#`` comments, values bare (a `` #`` starts a comment), in single quotes
(taken as written) or in double quotes (``\\"``, ``\\\\`` and ``\\n`` escapes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

DEFAULT_PATH = ".env"
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
_SINGLE = re.compile(r"^'([^']*)'\s*(?:#.*)?$")
_DOUBLE = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(?:#.*)?$')
_ESCAPES = {"n": "\n", '"': '"', "\\": "\\"}


def parse(text: str) -> dict[str, str]:
    """The settings of a ``.env`` file's text; a malformed line is a ``ValueError`` naming it."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ValueError(f"line {number}: not KEY=VALUE")
        key, raw = match.groups()
        quoted = _SINGLE.match(raw) or _DOUBLE.match(raw)
        if quoted is not None:
            value = quoted.group(1)
            if raw[0] == '"':
                value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), value)
        elif raw[:1] in ("'", '"'):
            raise ValueError(f"line {number}: unterminated quote")
        else:
            value = re.split(r"\s+#", raw, maxsplit=1)[0]
        values[key] = value
    return values


def merged(file_values: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The file's settings under the environment: a variable set in the environment wins."""
    return {**file_values, **environ}


def load(path: str | Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Add the settings of the file at ``path`` (if there is one) that ``environ`` (default:
    ``os.environ``) does not set; returns those added."""
    environ = os.environ if environ is None else environ
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        values = parse(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    added = {k: v for k, v in values.items() if k not in environ}
    environ.update(added)
    return added


def load_working_directory(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Add the settings of ``.env`` in the working directory (``KASSA_ENV_FILE`` names another
    file; empty: none) that the environment does not set: in a second terminal beside
    ``make run``, every command sees the stack's settings. Returns those added."""
    environ = os.environ if environ is None else environ
    path = environ.get("KASSA_ENV_FILE", DEFAULT_PATH)
    return load(path, environ) if path else {}


def render(values: Mapping[str, str]) -> str:
    """``.env`` text that ``parse`` reads back as ``values`` (every value double-quoted)."""

    def quote(v: str) -> str:
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    return "".join(f"{k}={quote(v)}\n" for k, v in values.items())


def write(path: str | Path, values: Mapping[str, str], header: str = "") -> None:
    """Write ``values`` to ``path``, readable by its owner only (0600), replacing the file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"# {line}\n" for line in header.splitlines()) + render(values))
