"""Fixed facts of the local development chain (LOCAL_EVM in chains/networks.json)."""

from __future__ import annotations

from dataclasses import dataclass

from eth_account import Account
from eth_utils import keccak, to_checksum_address

CHAIN_ID = 31337
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8545
DEFAULT_RPC_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"

# The dev tokens are deployed by a dedicated account whose key is public by
# construction. Its first two CREATE addresses are the token addresses listed
# in networks.json, so they are the same on every fresh anvil.
DEPLOYER_PRIVATE_KEY = "0x" + keccak(b"kassa dev token deployer").hex()
DEPLOYER_ADDRESS = Account.from_key(DEPLOYER_PRIVATE_KEY).address

# Base units minted to each of anvil's default accounts, per token.
MINT_PER_ACCOUNT_TOKENS = 1_000_000
# Native balance given to the deployer before it deploys (anvil_setBalance).
DEPLOYER_FUNDING_WEI = 1_000 * 10**18


def _rlp_uint(value: int) -> bytes:
    if value == 0:
        return b"\x80"
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(raw) == 1 and raw[0] < 0x80:
        return raw
    return bytes([0x80 + len(raw)]) + raw


def create_address(sender: str, nonce: int) -> str:
    """Address of the contract created by ``sender`` with a CREATE at ``nonce``."""
    sender_bytes = bytes.fromhex(sender[2:] if sender.startswith("0x") else sender)
    if len(sender_bytes) != 20 or nonce < 0 or nonce >= 2**64:
        raise ValueError("need a 20-byte address and a 64-bit nonce")
    payload = b"\x94" + sender_bytes + _rlp_uint(nonce)  # both short, so one-byte prefixes
    return to_checksum_address(keccak(bytes([0xC0 + len(payload)]) + payload)[12:])


@dataclass(frozen=True)
class DevToken:
    symbol: str
    name: str
    decimals: int
    deployer_nonce: int

    @property
    def address(self) -> str:
        return create_address(DEPLOYER_ADDRESS, self.deployer_nonce)

    @property
    def mint_per_account(self) -> int:
        return MINT_PER_ACCOUNT_TOKENS * 10**self.decimals


# Deployment order matters: each token's address follows from its nonce.
DEV_TOKENS: tuple[DevToken, ...] = (
    DevToken("USDC", "USD Coin", 6, 0),
    DevToken("USDT", "Tether USD", 6, 1),
)


def dev_token_addresses() -> dict[str, str]:
    """{"USDC": address, "USDT": address}: where the dev tokens live on any anvil."""
    return {token.symbol: token.address for token in DEV_TOKENS}
