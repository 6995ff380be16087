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


# -- what a lying or broken node may answer to eth_getLogs ----------------------------------


def test_logs_of_an_unconfigured_contract_or_malformed_transfers_are_passed_over_never_raised():
    """A node may answer logs it was not asked for: another contract's Transfer (whose
    symbol nobody configured), data longer than one uint256 word (an amount past what
    Numeric(78,0) holds), a recipient topic that is no address, fields of the wrong shape.
    Each is passed over, and the real transfer beside them is still read."""
    from tests.support.evm_nodes import word

    node = LogNode([[], []], {}, number=2, block_hash="h2")
    good = node.log
    to = good["topics"][2]
    odd = [
        {**good, "logIndex": "0x1", "address": UNWATCHED},  # a contract that is no configured token
        {**good, "logIndex": "0x2", "data": word(7) + "00" * 32},  # 64 bytes of data
        {**good, "logIndex": "0x3", "data": "0x" + "ff" * 33},  # 33 bytes
        {**good, "logIndex": "0x4", "data": "0x"},  # none
        {**good, "logIndex": "0x5", "data": "0x" + "zz" * 32},  # not hex
        {**good, "logIndex": "0x6", "topics": [good["topics"][0], good["topics"][1], "0x" + "ff" * 32]},
        {**good, "logIndex": "0x7", "topics": ["0x" + "12" * 32, good["topics"][1], to]},  # another event
        {**good, "logIndex": "0x8", "topics": [good["topics"][0], good["topics"][1], to[:-2]]},  # 31 bytes
        {**good, "logIndex": "0x9", "topics": "not a list"},
        {**good, "logIndex": "zz"},
        {**good, "logIndex": "0xa", "blockNumber": None},
        {**good, "logIndex": "0xb", "transactionHash": 7},
        {**good, "logIndex": "0xc", "address": None},
        "not a log",
        {**good, "logIndex": "0xd", "blockNumber": hex(99)},  # a block outside the range asked for
    ]
    node.logs = [*odd, {**good, "logIndex": "0xe"}]
    [found] = read(node)[1].transfers
    assert (found.index, found.token, found.to, found.amount_units) == (14, "USDC", A, 5)


def test_a_transfer_log_is_decoded_only_as_one_word_of_data_to_an_address_topic():
    from kassa_chain_watcher.evm import transfer_log
    from tests.support.evm_nodes import USDC, word

    tokens = {USDC.lower(): "USDC"}
    good = LogNode([[], []], {}, number=2, block_hash="h2").log
    top = 2**256 - 1
    assert transfer_log({**good, "data": word(top)}, tokens).amount == top
    assert transfer_log({**good, "address": USDC.upper().replace("0X", "0x")}, tokens).token == "USDC"
    assert transfer_log({**good, "data": word(top) + "00"}, tokens) is None
    assert transfer_log({**good, "removed": True}, tokens) is None
    assert transfer_log(good, {}) is None
