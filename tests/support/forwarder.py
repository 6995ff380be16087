"""The forwarder factory on a test chain: deployed once per anvil (before any snapshot, so
it survives the reverts between tests), and web3 handles on it and on its deposits."""

from __future__ import annotations

import secrets

from web3 import Web3

from kassa_common.chains import forwarder
from kassa_dev import chain as devchain
from kassa_sweeper.deploy import deploy_factory
from kassa_sweeper.txs import Signer

SWEEPER = Signer(devchain.SWEEPER_PRIVATE_KEY)


def ensure_factory(w3: Web3):
    """The factory contract on this chain, deployed if needed."""
    address, _ = deploy_factory(w3, SWEEPER)
    return w3.eth.contract(address=address, abi=forwarder.artifact("ForwarderFactory")["abi"])


def forwarder_at(w3: Web3, address: str):
    return w3.eth.contract(address=Web3.to_checksum_address(address), abi=forwarder.artifact("Forwarder")["abi"])


def fresh_address() -> str:
    return Web3.to_checksum_address("0x" + secrets.token_hex(20))


def fresh_salt() -> bytes:
    return secrets.token_bytes(32)
