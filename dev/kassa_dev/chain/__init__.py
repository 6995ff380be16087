"""Local EVM development chain: anvil plus real ERC-20 dev stablecoins.

Tooling comes from the repository's npm devDependencies (``npm ci`` at the
repository root): anvil from ``@foundry-rs/anvil-linux-amd64`` and solcjs from
``solc``. Typical use::

    proc = start_anvil(8545, block_time=1)
    w3 = Web3(Web3.HTTPProvider(DEFAULT_RPC_URL))
    tokens = deploy_dev_tokens(w3)          # {"USDC": "0x1a62…", "USDT": "0xc603…"}
    pay(w3, to=address, amount_base_units=5_000_000, token_contract=tokens["USDC"])
    stop_anvil(proc)
"""

from .compiler import compile_file, compile_token, solc_version
from .constants import (
    CHAIN_ID,
    CHAIN_ID_2,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_RPC_URL,
    DEPLOYER_ADDRESS,
    DEPLOYER_PRIVATE_KEY,
    DEV_TOKENS,
    MINT_PER_ACCOUNT_TOKENS,
    SWEEPER_PRIVATE_KEY,
    DevToken,
    create_address,
    dev_token_addresses,
)
from .errors import DevChainError
from .node import rpc_answers, start_anvil, stop_anvil
from .paths import anvil_binary, find_repo_root
from .tokens import TOKEN_ABI, TRANSFER_TOPIC, deploy_dev_tokens, erc20, mint, pay, token_balance

__all__ = [
    "CHAIN_ID",
    "CHAIN_ID_2",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_RPC_URL",
    "DEPLOYER_ADDRESS",
    "DEPLOYER_PRIVATE_KEY",
    "DEV_TOKENS",
    "MINT_PER_ACCOUNT_TOKENS",
    "SWEEPER_PRIVATE_KEY",
    "TOKEN_ABI",
    "TRANSFER_TOPIC",
    "DevChainError",
    "DevToken",
    "anvil_binary",
    "compile_file",
    "compile_token",
    "create_address",
    "deploy_dev_tokens",
    "dev_token_addresses",
    "erc20",
    "find_repo_root",
    "mint",
    "pay",
    "rpc_answers",
    "solc_version",
    "start_anvil",
    "stop_anvil",
    "token_balance",
]
