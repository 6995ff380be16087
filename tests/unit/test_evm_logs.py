"""Which token logs ``EvmChain.blocks`` keeps: a removed log, a Transfer with a fourth
topic (an NFT's token id) and a transfer to an address nobody watches are passed over,
and the logs after them still read. Scripted node answers, no I/O."""
from __future__ import annotations

import pytest

from tests.unit.test_evm_edges import LogNode
from tests.unit.test_evm_receipts import read

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
    from tests.unit.test_rpc_resilience import ALICE, LimitedNode, chain_on
    node = LimitedNode(limit=1)
    found = chain_on(node, log_range=4)._token_transfers(10, 15, {ALICE})
    assert [n for n, _, _ in found] == list(range(10, 16))
    assert [(lo, hi) for lo, hi in node.asked if lo == hi] == [(n, n) for n in range(10, 16)]


def test_a_backfill_of_one_block_asks_for_that_block():
    from tests.unit.test_evm_edges import A, EvmChain, QueryNode
    from tests.unit.test_rpc_resilience import NET as TOKENS_ONLY
    node = QueryNode()
    EvmChain(TOKENS_ONLY, node).history(9, 9, [A])
    assert [(q["fromBlock"], q["toBlock"]) for q in node.queries] == [("0x9", "0x9")]
