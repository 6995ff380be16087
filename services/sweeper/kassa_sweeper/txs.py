"""The sweeper key's transactions: EIP-1559 fees, signing, broadcasting, replacing.

The key (``SWEEPER_PRIVATE_KEY``) only ever pays gas: it calls the forwarder factory,
whose functions can send funds nowhere but each deposit's settlement address. Its
``repr`` never shows the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from eth_account import Account
from eth_typing import ChecksumAddress, HexStr
from web3 import Web3
from web3.exceptions import Web3RPCError
from web3.types import TxParams

GWEI = 10**9
# Nodes accept a replacement with the same nonce when both fees rise by at least 10%.
REPLACEMENT_BUMP = 1.125


@dataclass(frozen=True)
class Fees:
    max_fee_per_gas: int
    max_priority_fee_per_gas: int

    def fields(self) -> dict[str, int]:
        return {"maxFeePerGas": self.max_fee_per_gas, "maxPriorityFeePerGas": self.max_priority_fee_per_gas}

    def replacing(self, market: Fees) -> Fees:
        """Fees for a replacement of a transaction sent with these: at least 12.5% more on
        both, and never below what the market asks now."""
        priority = max(math.ceil(self.max_priority_fee_per_gas * REPLACEMENT_BUMP), market.max_priority_fee_per_gas)
        return Fees(max(math.ceil(self.max_fee_per_gas * REPLACEMENT_BUMP), market.max_fee_per_gas, priority), priority)


def market_fees(w3: Web3) -> Fees:
    """What a transaction should offer now: twice the base fee (room for six full blocks of
    rises) plus the node's suggested tip."""
    base = w3.eth.get_block("latest").get("baseFeePerGas") or 0
    try:
        priority = int(w3.eth.max_priority_fee)
    except (Web3RPCError, ValueError):
        priority = GWEI
    return Fees(2 * base + priority, priority)


class Signer:
    """Signs with the sweeper key; knows its address, never shows the key."""

    def __init__(self, private_key: str) -> None:
        try:
            self._account = Account.from_key(private_key)
        except (ValueError, TypeError):
            raise ValueError("SWEEPER_PRIVATE_KEY is not a private key (0x followed by 64 hex digits)") from None

    @property
    def address(self) -> ChecksumAddress:
        return self._account.address

    def sign(self, tx: dict[str, Any]) -> tuple[HexStr, HexStr]:
        """(tx hash, raw signed bytes as 0x hex)."""
        signed = self._account.sign_transaction(tx)
        return HexStr("0x" + bytes(signed.hash).hex()), HexStr("0x" + bytes(signed.raw_transaction).hex())

    def __repr__(self) -> str:
        return f"Signer({self.address})"


def broadcast(w3: Web3, raw: str) -> None:
    """Send signed bytes; a node that already has them is not an error (re-sending is how a
    transaction the node forgot, or one sent before a crash, goes out again)."""
    try:
        w3.eth.send_raw_transaction(HexStr(raw))
    except Web3RPCError as exc:
        text = str(exc).lower()
        if "already known" not in text and "known transaction" not in text and "already imported" not in text:
            raise


def transact(w3: Web3, signer: Signer, tx: dict[str, Any], *, timeout: float = 120.0) -> dict[str, Any]:
    """Sign ``tx`` (to, data, value) with fresh nonce, fees and gas, send it, wait for its
    receipt; raises RuntimeError if it reverted."""
    fields: dict[str, Any] = {
        "from": signer.address,
        "value": 0,
        **tx,
        "chainId": w3.eth.chain_id,
        "nonce": w3.eth.get_transaction_count(signer.address, "pending"),
        **market_fees(w3).fields(),
    }
    fields["gas"] = int(w3.eth.estimate_gas(cast(TxParams, fields)) * 1.2) + 10_000
    del fields["from"]
    tx_hash, raw = signer.sign(fields)
    broadcast(w3, raw)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=timeout, poll_latency=0.1)
    if receipt["status"] != 1:
        raise RuntimeError(f"transaction {tx_hash} reverted")
    return dict(receipt)
