"""Locating the repository's node_modules tooling (anvil, solcjs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import DevChainError

# Package that ships the anvil binary, and where the binary sits inside it.
ANVIL_PACKAGE = "@foundry-rs/anvil-linux-amd64"
ANVIL_PACKAGE_BIN = Path("bin") / "anvil"

# Set to use an anvil binary other than the one from node_modules.
ANVIL_BIN_ENV = "KASSA_ANVIL_BIN"
# Set to point at the repository root when it cannot be found from here.
REPO_ROOT_ENV = "KASSA_REPO_ROOT"


def _looks_like_repo_root(path: Path) -> bool:
    return (path / "package.json").is_file() and (path / "libs" / "common").is_dir()


def find_repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The repository root: the directory holding package.json and node_modules.

    Tried in order: ``start`` and its parents, $KASSA_REPO_ROOT, this file's
    parents (editable installs), the working directory and its parents.
    """
    candidates: list[Path] = []
    if start is not None:
        candidates.append(Path(start).resolve())
    env = os.environ.get(REPO_ROOT_ENV)
    if env:
        candidates.append(Path(env).resolve())
    candidates.append(Path(__file__).resolve().parent)
    candidates.append(Path.cwd().resolve())
    for base in candidates:
        for path in (base, *base.parents):
            if _looks_like_repo_root(path):
                return path
    raise DevChainError(
        f"cannot find the Kassa repository root (a directory with package.json and "
        f"libs/common); run from inside the repository or set {REPO_ROOT_ENV}"
    )


def _root(repo_root: str | os.PathLike[str] | None) -> Path:
    return Path(repo_root).resolve() if repo_root is not None else find_repo_root()


def node_modules(repo_root: str | os.PathLike[str] | None = None) -> Path:
    return _root(repo_root) / "node_modules"


def anvil_binary(repo_root: str | os.PathLike[str] | None = None) -> Path:
    """Path of the anvil executable.

    $KASSA_ANVIL_BIN wins if set; otherwise the binary shipped by the npm package
    (node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil, installed by ``npm ci``);
    otherwise an ``anvil`` on PATH (e.g. from foundryup on a non-Linux machine).
    """
    override = os.environ.get(ANVIL_BIN_ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise DevChainError(f"{ANVIL_BIN_ENV}={override} is not an executable file")
        return path
    tried = []
    try:
        path = node_modules(repo_root) / ANVIL_PACKAGE / ANVIL_PACKAGE_BIN
    except DevChainError:
        if repo_root is not None:
            raise
    else:
        if path.is_file() and os.access(path, os.X_OK):
            return path
        tried.append(str(path))
    on_path = shutil.which("anvil")
    if on_path:
        return Path(on_path)
    raise DevChainError(
        f"anvil not found (looked at {', '.join(tried) or 'node_modules'} and PATH); "
        f"run `npm ci` at the repository root"
    )


def node_executable() -> str:
    node = shutil.which("node")
    if not node:
        raise DevChainError("node (Node.js 20+) is needed to run solcjs but is not on PATH")
    return node
