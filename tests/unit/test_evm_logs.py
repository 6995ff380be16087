"""Which token logs ``EvmChain.blocks`` keeps: a removed log, a Transfer with a fourth
topic (an NFT's token id) and a transfer to an address nobody watches are passed over,
and the logs after them still read. Scripted node answers, no I/O."""

from __future__ import annotations

import pytest

from kassa_chain_watcher.evm import EvmChain
from tests.support.evm_nodes import A, LogNode, read

pytestmark = pytest.mark.unit
UNWATCHED = "0x" + "ee" * 20


def test_logs_that_are_no_watched_erc20_transfer_are_passed_over_and_the_next_ones_read():
    node = LogNode([[], []], {}, number=2, block_hash="h2")
    good = node.log
    removed = {**good, "logIndex": "0x1", "removed": True}
    nft = {**good, "logIndex": "0x2", "topics": [*good["topics"], "0x" + "0" * 63 + "7"]}
    elsewhere = {**good, "logIndex": "0x3", "topics": [*good["topics"][:2], "0x" + UNWATCHED[2:].rjust(64, "0")]}
    last = {**good, "logIndex": "0x4"}
    node.logs = [removed, nft, elsewhere, last]
    assert [f.index for f in read(node)[1].transfers] == [4]
    node.logs = [elsewhere, removed, last]
    assert [f.index for f in read(node)[1].transfers] == [4]


def test_a_node_that_answers_one_block_at_a_time_is_read_block_by_block():
    from tests.support.limited_node import ALICE, LimitedNode, chain_on

    node = LimitedNode(limit=1)
    found = chain_on(node, log_range=4)._token_transfers(10, 15, {ALICE})
    assert [n for n, _, _ in found] == list(range(10, 16))
    assert [(lo, hi) for lo, hi in node.asked if lo == hi] == [(n, n) for n in range(10, 16)]


def test_a_backfill_of_one_block_asks_for_that_block():
    from tests.support.evm_nodes import A, QueryNode
    from tests.support.limited_node import NET as TOKENS_ONLY

    node = QueryNode()
    EvmChain(TOKENS_ONLY, node).history(9, 9, [A])
    assert [(q["fromBlock"], q["toBlock"]) for q in node.queries] == [("0x9", "0x9")]


def test_a_long_backfill_asks_for_its_logs_in_windows_of_history_range_blocks_with_no_gap():
    from kassa_chain_watcher.evm import HISTORY_RANGE
    from tests.support.evm_nodes import A, QueryNode
    from tests.support.limited_node import NET as TOKENS_ONLY

    node = QueryNode()
    EvmChain(TOKENS_ONLY, node).history(0, HISTORY_RANGE, [A])
    assert [(int(q["fromBlock"], 16), int(q["toBlock"], 16)) for q in node.queries] == [
        (0, HISTORY_RANGE - 1),
        (HISTORY_RANGE, HISTORY_RANGE),
    ]


def test_a_backfill_reads_every_block_for_native_coin_once_in_batches():
    from tests.support.evm_nodes import NET as WITH_NATIVE
    from tests.support.evm_nodes import Node

    node = Node([[]] * 5, {})
    EvmChain(WITH_NATIVE, node, batch=2).history(1, 5, [A])
    assert [int(n, 16) for m, n in node.asked if m == "eth_getBlockByNumber"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("broken", ["missing", "another parent"])
def test_a_block_missing_or_not_following_during_a_backfill_means_the_chain_moved(broken):
    from kassa_chain_watcher.chain import ChainMoved
    from tests.support.evm_nodes import NET as WITH_NATIVE
    from tests.support.evm_nodes import Node

    class Broken(Node):
        def _block(self, n):
            if n != 3:
                return super()._block(n)
            return None if broken == "missing" else {**super()._block(n), "parentHash": "h2-of-another-fork"}

    with pytest.raises(ChainMoved):
        EvmChain(WITH_NATIVE, Broken([[]] * 4, {})).history(1, 4, [A])
