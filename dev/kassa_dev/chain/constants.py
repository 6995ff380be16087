"""Fixed facts of the local development chain (LOCAL_EVM in chains/networks.json)."""

from __future__ import annotations

from dataclasses import dataclass

from eth_account import Account
from eth_utils import keccak

from kassa_common.chains.evm import create_address  # re-exported: where a CREATE lands

CHAIN_ID = 31337
# LOCAL_EVM_2: a second development chain (wrong-network payments), the same dev tokens.
CHAIN_ID_2 = 31338
DEV_CHAIN_IDS = (CHAIN_ID, CHAIN_ID_2)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8545
DEFAULT_RPC_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"

# The dev tokens are deployed by a dedicated account whose key is public by
# construction. Its first two CREATE addresses are the token addresses listed
# in networks.json, so they are the same on every fresh anvil.
DEPLOYER_PRIVATE_KEY = "0x" + keccak(b"kassa dev token deployer").hex()
DEPLOYER_ADDRESS = Account.from_key(DEPLOYER_PRIVATE_KEY).address

# The sweeper's gas key on the dev chain: anvil's last default account (index 9 of its
# published test mnemonic), funded with 10,000 ETH like the others. Public: dev chain only.
SWEEPER_PRIVATE_KEY = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6"

# Base units minted to each of anvil's default accounts, per token.
MINT_PER_ACCOUNT_TOKENS = 1_000_000
# Native balance given to the deployer before it deploys (anvil_setBalance).
DEPLOYER_FUNDING_WEI = 1_000 * 10**18


@dataclass(frozen=True)
class DevToken:
    symbol: str
    name: str
    decimals: int
    deployer_nonce: int
    contract: str = "TestToken"  # the TestToken.sol flavour: TestToken or NoReturnToken

    @property
    def address(self) -> str:
        return create_address(DEPLOYER_ADDRESS, self.deployer_nonce)

    @property
    def mint_per_account(self) -> int:
        return MINT_PER_ACCOUNT_TOKENS * 10**self.decimals


# Deployment order matters: each token's address follows from its nonce.
DEV_TOKENS: tuple[DevToken, ...] = (
    DevToken("USDC", "USD Coin", 6, 0),
    DevToken("USDT", "Tether USD", 6, 1, "NoReturnToken"),  # like USDT on Ethereum: no return values
)


def dev_token_addresses() -> dict[str, str]:
    """{"USDC": address, "USDT": address}: where the dev tokens live on any anvil."""
    return {token.symbol: token.address for token in DEV_TOKENS}
