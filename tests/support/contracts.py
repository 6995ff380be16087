"""The test contracts of ``tests/contracts`` on a test chain: compiled by the pinned npm solc
(cached like the dev tokens, keyed by the sources, the compiler version and its settings) and
deployed by anvil's first account."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from web3 import Web3

from kassa_dev.chain.compiler import SOLC_SETTINGS, _default_cache_dir, _write_atomically, compile_sources, solc_version

SOURCES = Path(__file__).resolve().parents[1] / "contracts"


def artifacts() -> dict[str, dict[str, Any]]:
    """Every contract of ``tests/contracts/*.sol``: name -> {"abi", "bytecode"}."""
    sources = {p.name: p.read_text() for p in sorted(SOURCES.glob("*.sol"))}
    key = hashlib.sha256(json.dumps([sources, solc_version(), SOLC_SETTINGS], sort_keys=True).encode()).hexdigest()
    cache = _default_cache_dir(None) / f"test-contracts-{key[:24]}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    output = compile_sources(sources, SOLC_SETTINGS)
    built = {
        name: {"abi": c["abi"], "bytecode": "0x" + c["evm"]["bytecode"]["object"]}
        for file in output["contracts"].values()
        for name, c in file.items()
        if c["evm"]["bytecode"]["object"]
    }
    try:
        _write_atomically(cache, json.dumps(built))
    except OSError:
        pass  # a read-only checkout compiles every time
    return built


def deploy(w3: Web3, name: str, *args: Any):
    """A fresh ``name`` contract on ``w3``'s chain (a web3 contract handle)."""
    art = artifacts()[name]
    factory = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
    tx = factory.constructor(*args).transact({"from": w3.eth.accounts[0]})
    receipt = w3.eth.wait_for_transaction_receipt(tx)
    assert receipt.status == 1, f"deploying {name} failed"
    return w3.eth.contract(address=receipt.contractAddress, abi=art["abi"])
