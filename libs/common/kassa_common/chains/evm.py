"""Facts of the EVM itself that Kassa relies on, whichever network or token it watches.

The chain watcher filters ``eth_getLogs`` by the ERC-20 ``Transfer`` topic; the
development tokens emit it. Both take it from here, so the product never has to
reach into development tooling for a constant of the standard. Where a contract lands
(``create_address``, ``create2_address``) is computed here too, off-chain.
"""

from __future__ import annotations

from eth_utils import is_address, is_checksum_address, keccak, to_checksum_address

TRANSFER_EVENT = "Transfer(address,address,uint256)"
# keccak256 of the event signature: topic 0 of every ERC-20 Transfer log.
TRANSFER_TOPIC = "0x" + keccak(text=TRANSFER_EVENT).hex()


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
