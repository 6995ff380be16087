"""Facts of the EVM itself that Kassa relies on, whichever network or token it watches.

The chain watcher filters ``eth_getLogs`` by the ERC-20 ``Transfer`` topic; the
development tokens emit it. Both take it from here, so the product never has to
reach into development tooling for a constant of the standard. One decoder of such a log,
``transfer_of``, serves the chain watcher (``eth_getLogs``) and the refund proof (a
transaction's receipt, ``refunds.onchain``): both read a log the same way, so a transfer's
place among its transaction's transfers to an address is the same for both. Where a
contract lands (``create_address``, ``create2_address``) is computed here too, off-chain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from eth_utils import is_address, is_checksum_address, keccak, to_checksum_address

TRANSFER_EVENT = "Transfer(address,address,uint256)"
# keccak256 of the event signature: topic 0 of every ERC-20 Transfer log.
TRANSFER_TOPIC = "0x" + keccak(text=TRANSFER_EVENT).hex()
WORD = re.compile(r"0x[0-9a-fA-F]{64}")  # one 32-byte ABI word (a topic, a uint256, a hash)


class TokenTransfer(NamedTuple):
    """An ERC-20 ``Transfer(address,address,uint256)`` log of a configured token, decoded."""

    token: str  # the configured token's symbol
    sender: str  # lower case: the ``from`` topic
    to: str  # lower case
    amount: int  # base units: at most 2**256 - 1


def transfer_of(entry: Any, tokens: Mapping[str, str]) -> TokenTransfer | None:
    """``entry`` (a log as a node answers it) decoded if it is a Transfer log of a token in
    ``tokens`` (contract in lower case → symbol), else None: no log at all, a removed log,
    another contract's, another event, a Transfer with a fourth topic (an NFT's token id), a
    topic that is not one 32-byte word, a recipient topic that is no address, data that is
    not exactly one 32-byte word (none, short, or an amount past uint256). Hex digits in
    either case. Never raises: a node's bad answer is passed over."""
    if not isinstance(entry, dict) or entry.get("removed"):
        return None
    address, topics, data = entry.get("address"), entry.get("topics"), entry.get("data")
    token = tokens.get(address.lower()) if isinstance(address, str) else None
    if token is None or not isinstance(topics, list) or len(topics) != 3:
        return None
    if not all(isinstance(t, str) and WORD.fullmatch(t) for t in topics) or topics[0].lower() != TRANSFER_TOPIC:
        return None
    if topics[2][2:26] != "0" * 24 or not (isinstance(data, str) and WORD.fullmatch(data)):
        return None  # an address fills the word's last 20 bytes only
    return TokenTransfer(token, "0x" + topics[1][-40:].lower(), "0x" + topics[2][-40:].lower(), int(data, 16))


def checksummed(text: str) -> str:
    """``text`` as an EIP-55 checksummed address; ValueError when it is not an address, or
    when it is mixed-case with a wrong checksum (a typo is caught, never paid to)."""
    if not isinstance(text, str) or not is_address(text):
        raise ValueError(f"{text!r} is not an EVM address (0x followed by 40 hex digits)")
    mixed = text[2:] != text[2:].lower() and text[2:] != text[2:].upper()
    if mixed and not is_checksum_address(text):
        raise ValueError(f"{text!r} has a wrong EIP-55 checksum")
    return to_checksum_address(text)


def _address_bytes(address: str) -> bytes:
    raw = bytes.fromhex(address.removeprefix("0x"))
    if len(raw) != 20:
        raise ValueError(f"not a 20-byte address: {address!r}")
    return raw


def _rlp_uint(value: int) -> bytes:
    if value == 0:
        return b"\x80"
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(raw) == 1 and raw[0] < 0x80:
        return raw
    return bytes([0x80 + len(raw)]) + raw


def create_address(sender: str, nonce: int) -> str:
    """Address of the contract created by ``sender`` with a CREATE at ``nonce``."""
    if nonce < 0 or nonce >= 2**64:
        raise ValueError("need a 64-bit nonce")
    payload = b"\x94" + _address_bytes(sender) + _rlp_uint(nonce)  # both short, so one-byte prefixes
    return to_checksum_address(keccak(bytes([0xC0 + len(payload)]) + payload)[12:])


def create2_address(deployer: str, salt: bytes, init_code_hash: bytes) -> str:
    """Address of the contract ``deployer`` creates with CREATE2 (EIP-1014)."""
    if len(salt) != 32 or len(init_code_hash) != 32:
        raise ValueError("salt and init code hash are 32 bytes each")
    return to_checksum_address(keccak(b"\xff" + _address_bytes(deployer) + salt + init_code_hash)[12:])
