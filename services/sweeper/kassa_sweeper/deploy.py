"""Deploying the forwarder factory: once per chain, through the deterministic deployer.

The deployer (``0x4e59b448…``, on anvil and every supported network) creates the factory
with CREATE2 from a fixed salt and the committed bytecode, so the factory lands at the
same address on every chain: the address ``networks.json`` records. Deploying again is a
no-op, and anyone may deploy it: whoever pays, the code and the address are the same.
"""

from __future__ import annotations

from web3 import Web3

from kassa_common.chains import forwarder
from kassa_sweeper.txs import Signer, transact


class DeployError(RuntimeError):
    """The factory cannot be deployed on this chain (or did not land where it should)."""


def has_code(w3: Web3, address: str) -> bool:
    return len(w3.eth.get_code(Web3.to_checksum_address(address))) > 0


def deploy_factory(w3: Web3, signer: Signer, *, timeout: float = 120.0) -> tuple[str, str | None]:
    """Make sure the factory exists; returns (its address, the deploying tx or None if it
    was there already)."""
    address = forwarder.factory_address()
    if has_code(w3, address):
        return address, None
    if not has_code(w3, forwarder.DETERMINISTIC_DEPLOYER):
        raise DeployError(f"this chain has no deterministic deployer at {forwarder.DETERMINISTIC_DEPLOYER}")
    data = "0x" + (forwarder.FACTORY_SALT + forwarder.factory_init_code()).hex()
    receipt = transact(w3, signer, {"to": forwarder.DETERMINISTIC_DEPLOYER, "data": data}, timeout=timeout)
    if not has_code(w3, address):
        raise DeployError(f"the factory did not land at {address} (tx {receipt['transactionHash'].hex()})")
    return address, "0x" + bytes(receipt["transactionHash"]).hex()
