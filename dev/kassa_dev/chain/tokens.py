"""Deploying the dev stablecoins and moving funds on the local chain."""

from __future__ import annotations

import os
from typing import Any

from eth_account import Account
from web3 import Web3

from kassa_common.chains.evm import TRANSFER_TOPIC  # re-exported: topic 0 of the tokens' Transfer logs

from .compiler import compile_token
from .constants import (
    DEPLOYER_ADDRESS,
    DEPLOYER_FUNDING_WEI,
    DEPLOYER_PRIVATE_KEY,
    DEV_CHAIN_IDS,
    DEV_TOKENS,
    dev_token_addresses,
)
from .errors import DevChainError


def _fn(name: str, inputs: list[tuple[str, str]], outputs: list[str], mutability: str) -> dict:
    return {
        "type": "function",
        "name": name,
        "inputs": [{"name": n, "type": t} for n, t in inputs],
        "outputs": [{"name": "", "type": t} for t in outputs],
        "stateMutability": mutability,
    }


def _event(name: str, inputs: list[tuple[str, str, bool]]) -> dict:
    return {
        "type": "event",
        "name": name,
        "anonymous": False,
        "inputs": [{"name": n, "type": t, "indexed": i} for n, t, i in inputs],
    }


# ERC-20 surface of TestToken (plus mint), enough to talk to any ERC-20.
TOKEN_ABI: list[dict[str, Any]] = [
    _fn("name", [], ["string"], "view"),
    _fn("symbol", [], ["string"], "view"),
    _fn("decimals", [], ["uint8"], "view"),
    _fn("totalSupply", [], ["uint256"], "view"),
    _fn("balanceOf", [("account", "address")], ["uint256"], "view"),
    _fn("allowance", [("owner", "address"), ("spender", "address")], ["uint256"], "view"),
    _fn("transfer", [("to", "address"), ("value", "uint256")], ["bool"], "nonpayable"),
    _fn("approve", [("spender", "address"), ("value", "uint256")], ["bool"], "nonpayable"),
    _fn(
        "transferFrom",
        [("from", "address"), ("to", "address"), ("value", "uint256")],
        ["bool"],
        "nonpayable",
    ),
    _fn("mint", [("to", "address"), ("value", "uint256")], [], "nonpayable"),
    _event("Transfer", [("from", "address", True), ("to", "address", True), ("value", "uint256", False)]),
    _event(
        "Approval",
        [("owner", "address", True), ("spender", "address", True), ("value", "uint256", False)],
    ),
]

_GWEI = 10**9


def _rpc(w3: Web3, method: str, params: list) -> Any:
    response = w3.provider.make_request(method, params)  # type: ignore[arg-type]
    if "error" in response:
        raise DevChainError(f"{method} failed: {response['error']}")
    return response.get("result")


def _hex_hash(tx_hash: bytes | str) -> str:
    if isinstance(tx_hash, str):
        return tx_hash if tx_hash.startswith("0x") else "0x" + tx_hash
    return "0x" + bytes(tx_hash).hex()


def erc20(w3: Web3, address: str):
    """A web3 contract object for the ERC-20 at ``address``."""
    return w3.eth.contract(address=Web3.to_checksum_address(address), abi=TOKEN_ABI)


def token_balance(w3: Web3, token: str, owner: str) -> int:
    """``balanceOf(owner)`` on the ERC-20 at ``token``, in base units."""
    return erc20(w3, token).functions.balanceOf(Web3.to_checksum_address(owner)).call()


def _fee_fields(w3: Web3) -> dict[str, int]:
    base_fee = w3.eth.get_block("latest").get("baseFeePerGas", 0) or 0
    priority = _GWEI
    return {"maxPriorityFeePerGas": priority, "maxFeePerGas": 2 * base_fee + priority}


def _send_signed(w3: Web3, tx: dict[str, Any]) -> str:
    signed = Account.sign_transaction(tx, DEPLOYER_PRIVATE_KEY)
    return _hex_hash(w3.eth.send_raw_transaction(signed.raw_transaction))


def _wait_ok(w3: Web3, tx_hash: str, what: str, timeout: float = 120.0):
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=timeout, poll_latency=0.05)
    if receipt["status"] != 1:
        raise DevChainError(f"{what} reverted (tx {tx_hash})")
    return receipt


def _has_code(w3: Web3, address: str) -> bool:
    return len(w3.eth.get_code(Web3.to_checksum_address(address))) > 0


def deploy_dev_tokens(w3: Web3, *, repo_root: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Make sure USDC and USDT exist on the anvil behind ``w3``; return their addresses.

    Idempotent: if both contracts already have code nothing is sent (and nothing
    compiled). Otherwise the deployer is funded with ``anvil_setBalance``, each
    missing token is deployed from the deployer at its fixed nonce (USDC 0,
    USDT 1; USDT is the NoReturnToken flavour, like USDT on Ethereum), and
    1,000,000 tokens of each newly deployed token are minted to every account of
    ``eth_accounts`` (anvil's ten default accounts).

    Raises :class:`DevChainError` if the chain is not 31337, or if the deployer's
    nonce has moved past a token's nonce while that token has no code (the chain
    was used in a way that makes the fixed addresses unreachable: restart anvil).
    """
    expected = dev_token_addresses()
    missing = [t for t in DEV_TOKENS if not _has_code(w3, t.address)]
    if not missing:
        return expected

    chain_id = w3.eth.chain_id
    if chain_id not in DEV_CHAIN_IDS:
        raise DevChainError(f"refusing to deploy dev tokens on chain {chain_id} (want one of {DEV_CHAIN_IDS})")

    balance = w3.eth.get_balance(DEPLOYER_ADDRESS)
    if balance < DEPLOYER_FUNDING_WEI:
        _rpc(w3, "anvil_setBalance", [DEPLOYER_ADDRESS, hex(DEPLOYER_FUNDING_WEI)])

    for token in missing:
        nonce = w3.eth.get_transaction_count(DEPLOYER_ADDRESS, "pending")
        if nonce != token.deployer_nonce:
            raise DevChainError(
                f"{token.symbol} has no code at {token.address}, but the dev token deployer "
                f"{DEPLOYER_ADDRESS} is at nonce {nonce}, not {token.deployer_nonce}: that address "
                f"can no longer be reached on this chain. Start a fresh anvil."
            )
        abi, bytecode = compile_token(repo_root, contract=token.contract)
        factory = w3.eth.contract(abi=abi, bytecode=bytecode)
        tx = factory.constructor(token.name, token.symbol, token.decimals).build_transaction(
            {"from": DEPLOYER_ADDRESS, "nonce": nonce, "chainId": chain_id, **_fee_fields(w3)}
        )
        receipt = _wait_ok(w3, _send_signed(w3, tx), f"deploying {token.symbol}")
        deployed = Web3.to_checksum_address(receipt["contractAddress"])
        if deployed != token.address:
            raise DevChainError(f"{token.symbol} deployed at {deployed}, expected {token.address}")

    # Mint for the tokens deployed just now; all transactions go out before any
    # receipt is awaited, so with --block-time they share a block or two.
    accounts = [Web3.to_checksum_address(a) for a in w3.eth.accounts]
    nonce = w3.eth.get_transaction_count(DEPLOYER_ADDRESS, "pending")
    fees = _fee_fields(w3)
    sent: list[tuple[str, str]] = []
    for token in missing:
        contract = erc20(w3, token.address)
        for account in accounts:
            tx = contract.functions.mint(account, token.mint_per_account).build_transaction(
                {"from": DEPLOYER_ADDRESS, "nonce": nonce, "chainId": chain_id, "gas": 120_000, **fees}
            )
            sent.append((_send_signed(w3, tx), f"minting {token.symbol} to {account}"))
            nonce += 1
    for tx_hash, what in sent:
        _wait_ok(w3, tx_hash, what)
    return expected


def mint(w3: Web3, *, token: str, to: str, amount_base_units: int) -> str:
    """Mint dev tokens at ``token`` to ``to`` (signed by the deployer, the only minter).

    Returns the 0x-prefixed tx hash once mined.
    """
    contract = erc20(w3, token)
    tx = contract.functions.mint(Web3.to_checksum_address(to), amount_base_units).build_transaction(
        {
            "from": DEPLOYER_ADDRESS,
            "nonce": w3.eth.get_transaction_count(DEPLOYER_ADDRESS, "pending"),
            "chainId": w3.eth.chain_id,
            **_fee_fields(w3),
        }
    )
    tx_hash = _send_signed(w3, tx)
    _wait_ok(w3, tx_hash, "mint")
    return tx_hash


def pay(
    w3: Web3,
    *,
    to: str,
    amount_base_units: int,
    token_contract: str | None,
    sender: str | None = None,
    timeout: float = 120.0,
) -> str:
    """Send native coin (``token_contract=None``) or an ERC-20 ``transfer`` and wait for it.

    ``sender`` defaults to anvil's first account. Accounts that anvil does not
    hold keys for are impersonated for the one transaction (anvil only), so any
    funded address can pay. Returns the 0x-prefixed transaction hash once its
    receipt exists; raises :class:`DevChainError` if the transaction reverted.
    """
    if isinstance(amount_base_units, bool) or not isinstance(amount_base_units, int):
        raise TypeError("amount_base_units must be an int")
    if amount_base_units < 0:
        raise ValueError("amount_base_units must not be negative")
    recipient = Web3.to_checksum_address(to)
    unlocked = [Web3.to_checksum_address(a) for a in w3.eth.accounts]
    if sender is None:
        if not unlocked:
            raise DevChainError("the node has no unlocked accounts; pass sender=")
        sender = unlocked[0]
    sender = Web3.to_checksum_address(sender)
    impersonate = sender not in unlocked
    if impersonate:
        _rpc(w3, "anvil_impersonateAccount", [sender])
    try:
        if token_contract is None:
            tx_hash = w3.eth.send_transaction({"from": sender, "to": recipient, "value": amount_base_units})
            what = f"paying {amount_base_units} wei to {recipient}"
        else:
            contract = erc20(w3, token_contract)
            tx_hash = contract.functions.transfer(recipient, amount_base_units).transact({"from": sender})
            what = f"transferring {amount_base_units} of {contract.address} to {recipient}"
    finally:
        if impersonate:
            _rpc(w3, "anvil_stopImpersonatingAccount", [sender])
    tx_hash = _hex_hash(tx_hash)
    _wait_ok(w3, tx_hash, what, timeout=timeout)
    return tx_hash


__all__ = [
    "TOKEN_ABI",
    "TRANSFER_TOPIC",
    "deploy_dev_tokens",
    "erc20",
    "mint",
    "pay",
    "token_balance",
]
