"""Native transfers by a transaction to the address (evm.py): counted only when the
transaction's receipt says it succeeded; only those transactions' receipts are read."""

from __future__ import annotations

import pytest

from kassa_common.chains.networks import load_registry
from kassa_common.chains.rpc import RpcError
from kassa_chain_watcher.chain import ChainMoved, Found
from kassa_chain_watcher.evm import EvmChain

pytestmark = pytest.mark.unit
NET = load_registry({"LOCAL_EVM_RPC_URL": "http://node"}).get("LOCAL_EVM")  # ETH, USDC, USDT
A, B, OTHER = "0x" + "aa" * 20, "0x" + "bb" * 20, "0x" + "ee" * 20


class Node:
    """Blocks 1..n of transactions (hash, to, wei); receipts by hash: (status, block hash)."""

    def __init__(self, blocks: list[list[tuple[str, str, int]]], receipts: dict[str, tuple[str | None, str]]):
        self.blocks, self.receipts, self.asked = blocks, receipts, []

    def _block(self, n: int) -> dict:
        return {
            "hash": f"h{n}",
            "parentHash": f"h{n - 1}",
            "transactions": [{"hash": h, "to": to, "value": hex(wei)} for h, to, wei in self.blocks[n - 1]],
        }

    def batch(self, calls, chunk=100):
        self.asked += [(m, p[0]) for m, p in calls]
        out = []
        for method, params in calls:
            if method == "eth_getBlockByNumber":
                out.append(self._block(int(params[0], 16)))
            elif method == "eth_getTransactionReceipt":
                status, block = self.receipts[params[0]]
                out.append({"blockHash": block, **({"status": status} if status else {})})
            else:  # balances of the followed addresses: nothing moved inside contracts
                out.append("0x0")
        return out

    def call(self, method, *params):
        if method == "eth_getLogs":
            return []
        raise RpcError(f"{method}: {{'code': -32601}}")


def read(node, watched=(A, B)):
    return EvmChain(NET, node).blocks(1, len(node.blocks), set(watched))


def test_a_reverted_transaction_to_the_address_credits_nothing():
    node = Node(
        [[("0xok", A, 5), ("0xrev", A, 7)], [("0xrev2", B, 9)]],
        {"0xok": ("0x1", "h1"), "0xrev": ("0x0", "h1"), "0xrev2": ("0x0", "h2")},
    )
    blocks = read(node)
    assert [b.transfers for b in blocks] == [[Found("0xok", -1, "ETH", A, 5)], []]


def test_only_the_receipts_of_matching_transactions_are_read():
    node = Node([[("0xok", A, 5), ("0xelse", OTHER, 5), ("0xzero", B, 0)]], {"0xok": ("0x1", "h1")})
    read(node)
    assert [h for m, h in node.asked if m == "eth_getTransactionReceipt"] == ["0xok"]


def test_no_matching_transaction_asks_for_no_receipt():
    node = Node([[("0xelse", OTHER, 5)]], {})
    read(node)
    assert not [m for m, _ in node.asked if m == "eth_getTransactionReceipt"]


def test_a_receipt_without_a_status_is_of_a_block_before_byzantium_and_counts():
    node = Node([[("0xold", A, 5)]], {"0xold": (None, "h1")})
    assert read(node)[0].transfers == [Found("0xold", -1, "ETH", A, 5)]


def test_a_receipt_from_another_block_means_the_chain_moved():
    node = Node([[("0xok", A, 5)]], {"0xok": ("0x1", "h1-of-another-fork")})
    with pytest.raises(ChainMoved):
        read(node)
