"""Settlement addresses that are contracts, deployed on anvil: the real Safe (v1.4.1, its
compiled artifacts from the pinned npm package ``@safe-global/safe-contracts``), and the
small contracts of ``tests/contracts/Settlements.sol`` (compiled by the pinned solc):
shapes of Safe's and ERC-4337 accounts' receive paths, and hostile receivers (one that
burns gas, one that refuses the coin, one that needs much gas, one that burns only when
given much gas)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from web3 import Web3

from kassa_dev.chain import compile_file
from kassa_dev.chain.paths import node_modules

SOURCE = Path(__file__).resolve().parents[1] / "contracts" / "Settlements.sol"
SAFE_ARTIFACTS = Path("@safe-global") / "safe-contracts" / "build" / "artifacts" / "contracts"
ZERO = "0x" + "00" * 20


@cache
def compiled() -> dict[str, dict]:
    return compile_file(SOURCE)


def safe_artifact(path: str) -> dict:
    """A compiled contract of the Safe package, e.g. ``Safe.sol/Safe``."""
    return json.loads((node_modules() / SAFE_ARTIFACTS / f"{path}.json").read_text())


def deploy_artifact(w3: Web3, abi, bytecode: str, *args, sender: str | None = None) -> str:
    sender = sender or w3.eth.accounts[0]
    tx = w3.eth.contract(abi=abi, bytecode=bytecode).constructor(*args).transact({"from": sender})
    receipt = w3.eth.wait_for_transaction_receipt(tx)
    assert receipt["status"] == 1, f"deploying failed: {receipt}"
    return Web3.to_checksum_address(receipt["contractAddress"])


def deploy(w3: Web3, name: str, *args) -> str:
    """Deploy contract ``name`` of Settlements.sol; its address."""
    c = compiled()[name]
    return deploy_artifact(w3, c["abi"], c["bytecode"], *args)


def contract(w3: Web3, name: str, address: str):
    return w3.eth.contract(address=Web3.to_checksum_address(address), abi=compiled()[name]["abi"])


def safe_like(w3: Web3) -> str:
    """A proxy and singleton shaped like Safe's receive path (no Safe code)."""
    return deploy(w3, "SafeLikeProxy", deploy(w3, "SafeLikeSingleton"))


def smart_account(w3: Web3, *, transparent: bool = False) -> str:
    """An ERC-1967 proxy over an ERC-4337-style account (``transparent``: the admin check
    first, and an account that emits an event on receipt)."""
    account = deploy(w3, "EmittingSmartAccount" if transparent else "SmartAccount")
    return deploy(w3, "ERC1967Proxy", account, transparent)


def safe(w3: Web3, *, l2: bool = False) -> str:
    """A real Safe v1.4.1 (``SafeL2`` with ``l2``): the singleton, the proxy factory and the
    compatibility fallback handler deployed, then a 1-of-1 Safe proxy created and set up as
    the Safe web app does; the proxy's address."""
    owner = w3.eth.accounts[0]
    singleton_artifact = safe_artifact("SafeL2.sol/SafeL2" if l2 else "Safe.sol/Safe")
    singleton = deploy_artifact(w3, singleton_artifact["abi"], singleton_artifact["bytecode"])
    factory_artifact = safe_artifact("proxies/SafeProxyFactory.sol/SafeProxyFactory")
    factory = w3.eth.contract(
        address=deploy_artifact(w3, factory_artifact["abi"], factory_artifact["bytecode"]), abi=factory_artifact["abi"]
    )
    handler_artifact = safe_artifact("handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler")
    handler = deploy_artifact(w3, handler_artifact["abi"], handler_artifact["bytecode"])
    setup = w3.eth.contract(abi=singleton_artifact["abi"]).encode_abi(
        "setup", [[owner], 1, ZERO, b"", handler, ZERO, 0, ZERO]
    )
    create = factory.functions.createProxyWithNonce(singleton, bytes.fromhex(setup[2:]), 0)
    proxy = create.call({"from": owner})
    receipt = w3.eth.wait_for_transaction_receipt(create.transact({"from": owner}))
    assert receipt["status"] == 1 and w3.eth.get_code(proxy) != b""
    safe_contract = w3.eth.contract(address=proxy, abi=singleton_artifact["abi"])
    assert safe_contract.functions.getOwners().call() == [owner]
    return Web3.to_checksum_address(proxy)


def least_gas_to_receive(w3: Web3, probe: str, to: str, *, value: int = 1, high: int = 200_000) -> int | None:
    """The least gas ``to`` needs to take ``value`` from a contract's call (not counting the
    2,300 a value transfer adds), found by bisection over ``eth_call``s of ``GasProbe``, each
    its own transaction so everything ``to`` touches is cold; None if ``high`` is not enough."""
    gas_probe = contract(w3, "GasProbe", probe)
    sender = w3.eth.accounts[0]

    def takes(gas: int) -> bool:
        return gas_probe.functions.probe(to, gas).call({"from": sender, "value": value})

    if not takes(high):
        return None
    low = 0  # known to fail below ``low``? 0 may succeed: an account with no code
    if takes(0):
        return 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if takes(middle) else (middle, high)
    return high
