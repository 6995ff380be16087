"""Native transfers by a transaction to the address (evm.py): counted only when the
transaction's receipt says it succeeded; only those transactions' receipts are read."""

from __future__ import annotations

import pytest

from kassa_chain_watcher.chain import ChainMoved, Found
from tests.support.evm_nodes import OTHER, A, B, Node, read

pytestmark = pytest.mark.unit


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
