"""Facts of the EVM itself that Kassa relies on, whichever network or token it watches.

The chain watcher filters ``eth_getLogs`` by the ERC-20 ``Transfer`` topic; the
development tokens emit it. Both take it from here, so the product never has to
reach into development tooling for a constant of the standard.
"""
from __future__ import annotations

from eth_utils import keccak

TRANSFER_EVENT = "Transfer(address,address,uint256)"
# keccak256 of the event signature: topic 0 of every ERC-20 Transfer log.
TRANSFER_TOPIC = "0x" + keccak(text=TRANSFER_EVENT).hex()
