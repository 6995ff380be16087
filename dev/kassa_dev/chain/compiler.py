"""Compiling Solidity with solcjs (the npm ``solc`` package): the dev tokens of
TestToken.sol and any other single file (cached, ``compile_file``), and any set of
sources through ``compile_sources``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .errors import DevChainError
from .paths import node_executable, node_modules

SOURCE_PATH = Path(__file__).with_name("TestToken.sol")
CONTRACT_NAME = "TestToken"  # the standard flavour; NoReturnToken is the USDT-like one

# Set to keep compiled artifacts somewhere other than node_modules/.cache.
CACHE_DIR_ENV = "KASSA_DEVCHAIN_CACHE"

# Part of the cache key: changing any of these recompiles.
SOLC_SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    "evmVersion": "cancun",
    "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object"]}},
}

# Standard JSON in on stdin, standard JSON out on stdout, through solc's wrapper.
_NODE_SCRIPT = r"""
const solc = require(process.argv[1]);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const output = JSON.parse(solc.compile(input));
  output.compilerVersion = solc.version();
  process.stdout.write(JSON.stringify(output));
});
"""


def solc_package_dir(repo_root: str | os.PathLike[str] | None = None) -> Path:
    path = node_modules(repo_root) / "solc"
    if not (path / "package.json").is_file():
        raise DevChainError(f"solc not installed at {path}; run `npm ci` at the repository root")
    return path


def solc_version(repo_root: str | os.PathLike[str] | None = None) -> str:
    """Version of the npm solc package (e.g. "0.8.37")."""
    meta = json.loads((solc_package_dir(repo_root) / "package.json").read_text())
    return str(meta["version"])


def _default_cache_dir(repo_root: str | os.PathLike[str] | None) -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    return node_modules(repo_root) / ".cache" / "kassa-devchain"


def _cache_key(source: str, version: str) -> str:
    h = hashlib.sha256()
    for part in (source, version, json.dumps(SOLC_SETTINGS, sort_keys=True)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def compile_sources(
    sources: dict[str, str],
    settings: dict[str, Any],
    repo_root: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """solc's standard-JSON output for ``sources`` (file name -> source text).

    Raises :class:`DevChainError` when solcjs fails or any source does not compile.
    """
    solc_dir = solc_package_dir(repo_root)
    standard_input = {
        "language": "Solidity",
        "sources": {name: {"content": text} for name, text in sources.items()},
        "settings": settings,
    }
    proc = subprocess.run(
        [node_executable(), "-e", _NODE_SCRIPT, str(solc_dir)],
        input=json.dumps(standard_input),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise DevChainError(f"solcjs failed (exit {proc.returncode}): {proc.stderr.strip()}")
    output = json.loads(proc.stdout)
    errors = [e for e in output.get("errors", []) if e.get("severity") == "error"]
    if errors:
        details = "\n".join(e.get("formattedMessage") or e.get("message", "") for e in errors)
        raise DevChainError(f"{', '.join(sources)} does not compile:\n{details}")
    return output


def _write_atomically(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def compile_file(
    source_path: str | os.PathLike[str],
    repo_root: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every contract with bytecode in one Solidity file: name -> ``{"abi", "bytecode"}``.

    The result is cached in ``cache_dir`` (default: $KASSA_DEVCHAIN_CACHE, else
    node_modules/.cache/kassa-devchain) under a key made of the source hash, the
    solc package version and the compiler settings. Cache writes are atomic, so
    parallel test workers may share the directory.
    """
    path = Path(source_path)
    source = path.read_text()
    version = solc_version(repo_root)
    directory = Path(cache_dir) if cache_dir is not None else _default_cache_dir(repo_root)
    cache_file = directory / f"{path.stem}-{_cache_key(source, version)}.json"
    try:
        return json.loads(cache_file.read_text())["contracts"]
    except (OSError, ValueError, KeyError):
        pass

    output = compile_sources({path.name: source}, SOLC_SETTINGS, repo_root)
    contracts = {}
    for name, compiled in output["contracts"][path.name].items():
        bytecode = "0x" + compiled["evm"]["bytecode"]["object"]
        if len(bytecode) > 2:  # abstract contracts and interfaces have none
            contracts[name] = {"abi": compiled["abi"], "bytecode": bytecode}
    artifact = {
        "source": path.name,
        "compilerVersion": output.get("compilerVersion"),
        "settings": SOLC_SETTINGS,
        "contracts": contracts,
    }
    try:
        _write_atomically(cache_file, json.dumps(artifact))
    except OSError:
        pass  # a read-only checkout still works, just without the cache
    return contracts


def compile_token(
    repo_root: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    contract: str = CONTRACT_NAME,
) -> tuple[list[dict[str, Any]], str]:
    """Compile TestToken.sol; return ``(abi, creation_bytecode_0x_hex)`` of ``contract``
    (``TestToken`` or ``NoReturnToken``), cached as :func:`compile_file` does."""
    contracts = compile_file(SOURCE_PATH, repo_root, cache_dir=cache_dir)
    if contract not in contracts:
        raise DevChainError(f"solcjs produced no bytecode for {contract}")
    return contracts[contract]["abi"], contracts[contract]["bytecode"]
