"""What ``EvmChain.blocks`` reads at its edges (evm.py): the smallest native transfer, a
token log that belongs to no block of the range or to another fork, a window of no blocks.
Scripted node answers, no I/O."""

from __future__ import annotations

import pytest

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_chain_watcher.chain import ChainMoved, Found
from kassa_chain_watcher.evm import EvmChain
from tests.support.evm_nodes import NET, A, LogNode, Node, QueryNode, read, word

pytestmark = pytest.mark.unit


def test_one_wei_sent_to_the_address_is_a_transfer():
    node = Node([[("0xwei", A, 1)]], {"0xwei": ("0x1", "h1")})
    assert read(node)[0].transfers == [Found("0xwei", -1, "ETH", A, 1)]


def test_a_token_log_of_a_block_in_the_range_is_added_to_it():
    node = LogNode([[], []], {}, number=2, block_hash="h2")
    blocks = read(node)
    assert [[f.tx_hash for f in b.transfers] for b in blocks] == [[], ["0x" + "7" * 64]]


def test_a_token_log_from_another_fork_of_a_block_in_the_range_means_the_chain_moved():
    with pytest.raises(ChainMoved):
        read(LogNode([[], []], {}, number=2, block_hash="h2-of-another-fork"))


def test_a_token_log_of_a_block_outside_the_range_is_passed_over():
    """No node's chain moves a log out of the range asked for: such an answer is a broken or
    lying node's, and raising ChainMoved for it would make the scanner ask again forever."""
    assert [b.transfers for b in read(LogNode([[], []], {}, number=3, block_hash="h3"))] == [[], []]


def test_logs_of_one_transaction_to_one_address_are_ranked_from_zero():
    node = LogNode([[], []], {}, number=2, block_hash="h2")
    node.logs = [node.log, {**node.log, "logIndex": "0x9", "data": word(6)}]
    found = read(node)[1].transfers
    assert [(f.index, f.position, f.amount_units) for f in found] == [(3, 0, 5), (9, 1, 6)]


def test_a_transfer_log_without_data_is_no_transfer():
    node = LogNode([[]], {}, number=1, block_hash="h1")
    node.log["data"] = "0x"  # an ERC-20 Transfer's amount is one 32-byte word: this is no such log
    assert read(node)[0].transfers == []


def test_a_log_window_of_no_blocks_is_one_block():
    chain = EvmChain(NET, Node([], {}), log_range=0)
    assert chain.log_range == chain.max_log_range == 1


def test_a_backfill_asks_only_for_the_logs_to_its_addresses_in_the_to_topic():
    from tests.support.limited_node import NET as TOKENS_ONLY  # no native coin: eth_getLogs only

    node = QueryNode()
    EvmChain(TOKENS_ONLY, node).history(5, 9, [A])
    assert [q["topics"] for q in node.queries] == [[TRANSFER_TOPIC, None, ["0x" + "0" * 24 + "aa" * 20]]]
    assert [(q["fromBlock"], q["toBlock"]) for q in node.queries] == [("0x5", "0x9")]
