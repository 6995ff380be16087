"""Build the forwarder contracts: ``python -m kassa_dev.contracts [--check]``.

The Solidity sources live in ``contracts/`` at the repository root; the product loads
their compiled artifacts (ABI and bytecode) from ``kassa_common/chains/contracts/`` at
runtime, without Node. This compiles the sources with the pinned npm ``solc`` and writes
those artifacts; ``--check`` only compares and fails when they differ (a test does the
same), so the committed bytecode is always what the committed sources compile to.

The factory's address follows from its bytecode (it is deployed with CREATE2 through
the deterministic deployer), so the compiler settings are part of the contract: the
metadata hash is left out of the bytecode, so comments and file paths do not move it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kassa_common.chains import forwarder
from kassa_dev.chain.compiler import compile_sources
from kassa_dev.chain.paths import find_repo_root

# The contracts to ship, and the source file of each.
CONTRACTS = {"Forwarder": "Forwarder.sol", "ForwarderFactory": "ForwarderFactory.sol"}
SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 10_000},  # flushed often, deployed once
    "evmVersion": "paris",  # no PUSH0: the same bytecode runs on every EVM chain
    "metadata": {"bytecodeHash": "none", "appendCBOR": False},
    "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"]}},
}


def sources_dir(repo_root: str | os.PathLike[str] | None = None) -> Path:
    return (Path(repo_root) if repo_root is not None else find_repo_root()) / "contracts"


def build(repo_root: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The artifact file text of each contract, freshly compiled from ``contracts/``."""
    directory = sources_dir(repo_root)
    sources = {path.name: path.read_text() for path in sorted(directory.glob("*.sol"))}
    output = compile_sources(sources, SETTINGS, repo_root)
    artifacts = {}
    for name, source in CONTRACTS.items():
        compiled = output["contracts"][source][name]
        artifact = {
            "contract": name,
            "source": f"contracts/{source}",
            "compiler": output["compilerVersion"],
            "settings": {k: v for k, v in SETTINGS.items() if k != "outputSelection"},
            "abi": compiled["abi"],
            "bytecode": "0x" + compiled["evm"]["bytecode"]["object"],
            "deployedBytecode": "0x" + compiled["evm"]["deployedBytecode"]["object"],
        }
        artifacts[name] = json.dumps(artifact, indent=1, sort_keys=True) + "\n"
    return artifacts


def stale(repo_root: str | os.PathLike[str] | None = None) -> list[str]:
    """The contracts whose committed artifact differs from a fresh compile."""
    return [
        name
        for name, text in build(repo_root).items()
        if not forwarder.artifact_path(name).is_file() or forwarder.artifact_path(name).read_text() != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kassa_dev.contracts", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if an artifact is stale")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"{forwarder.artifact_path(name)} is stale: run python -m kassa_dev.contracts", file=sys.stderr)
        return 1 if names else 0
    for name, text in build().items():
        forwarder.artifact_path(name).write_text(text)
        print(f"wrote {forwarder.artifact_path(name)}")
    print(f"factory address (every chain): {forwarder.factory_address()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
