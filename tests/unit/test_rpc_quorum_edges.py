"""``Quorum`` at its edges, called directly: how far the confirmed line moves when other
nodes lag, hold back a block or a transfer at exactly the boundary, and when a late
address's backfill counts as agreed. Scripted chains, no I/O."""

from __future__ import annotations

import copy

import pytest
from prometheus_client import REGISTRY

from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcUnavailable
from kassa_chain_watcher.chain import Found
from kassa_chain_watcher.quorum import NoQuorum, Quorum
from tests.support.scanner import ALICE, FakeChain, transfer

pytestmark = pytest.mark.unit

URLS = ("http://reader:1", "http://two:2", "http://three:3")
REQUIRED = 3
BOB = "0xb0b"


class Peer:
    """Another node: a copy of the reader's chain that can be cut short, forged or down,
    counting what it is asked."""

    def __init__(self, reader: FakeChain, tip: int | None = None) -> None:
        self.chain = copy.deepcopy(reader)
        if tip is not None:
            del self.chain.chain[tip + 1 :]
        self.calls: list[str] = []
        self.native: list[set[str]] = []
        self.down = False

    def _asked(self, what: str) -> None:
        self.calls.append(what)
        if self.down:
            raise RpcUnavailable("http://peer: ConnectionError")

    def tip(self):
        self._asked("tip")
        return self.chain.tip()

    def hashes(self, numbers):
        self._asked("hashes")
        return self.chain.hashes(numbers)

    def history(self, start, end, addresses, native=()):
        self._asked("history")
        self.native.append(set(native))
        return self.chain.history(start, end, addresses, native)


def quorum(need: int, *peers: Peer, name: str = "QEDGE") -> Quorum:
    net = Network(name, "evm", 1, REQUIRED, 1.0, URLS[0], (), rpc_urls=URLS[: 1 + len(peers)], rpc_quorum=need)
    pool = NodePool(net, check=lambda *_: None)
    pool.reader = pool.nodes[0]
    chains = {id(node.rpc): peer for node, peer in zip(pool.nodes[1:], peers, strict=True)}
    return Quorum(net, pool, lambda rpc: chains[id(rpc)])


def reader_with(at: dict[int, list[Found]], height: int = 20) -> FakeChain:
    """The reader's chain up to ``height``, with these transfers in these blocks."""
    chain = FakeChain(height)
    for n, found in at.items():
        chain.chain[n].transfers.extend(found)
    return chain


def above(chain: FakeChain, floor: int) -> dict:
    """The stored blocks the scanner passes: every height above ``floor``."""
    return {b.number: b for b in chain.chain if b.number > floor}


def test_a_line_that_does_not_move_asks_no_node():
    reader = reader_with({})
    peer = Peer(reader)
    q = quorum(2, peer)
    assert q.line(20, 10, 10, above(reader, 10)) == 10
    assert peer.calls == []


def test_a_node_whose_tip_puts_the_depth_exactly_at_the_line_now_holds_it_there():
    reader = reader_with({})
    peer = Peer(reader, tip=10 + REQUIRED - 1)  # block 10 is exactly ``required`` deep on it
    q = quorum(2, peer)
    assert q.line(20, 15, 10, above(reader, 10)) == 10  # only the heights above the line are stored
    assert peer.calls == ["tip"]


def test_one_more_block_on_the_lagging_node_moves_the_line_by_one():
    reader = reader_with({})
    q = quorum(2, Peer(reader, tip=10 + REQUIRED))
    assert q.line(20, 15, 10, above(reader, 10)) == 11


def test_a_node_ahead_of_the_reader_lags_by_zero_blocks():
    reader = reader_with({})
    peer = Peer(reader)
    peer.chain.extend(2)
    q = quorum(2, peer, name="QAHEAD")
    assert q.line(20, 18, 10, above(reader, 10)) == 18
    node = q.pool.nodes[1]
    assert REGISTRY.get_sample_value("kassa_rpc_node_lag_blocks", node.labels("QAHEAD")) == 0


def test_a_transfer_the_other_node_lacks_exactly_at_the_line_holds_it_one_below():
    reader = reader_with({14: [transfer("0xforged")]})
    q = quorum(2, Peer(reader_with({})))
    assert q.line(20, 14, 10, above(reader, 10)) == 13


def test_a_transfer_the_other_node_lacks_in_the_middle_holds_the_line_just_below_it():
    reader = reader_with({13: [transfer("0xforged")], 15: [transfer("0xreal")]})
    q = quorum(2, Peer(reader_with({15: [transfer("0xreal")]})))
    assert q.line(20, 16, 10, above(reader, 10)) == 12


def test_what_lies_at_or_below_the_line_now_is_not_checked_again():
    reader = reader_with({10: [transfer("0xold")]})  # already confirmed: the other node's copy differs
    q = quorum(2, Peer(reader_with({})))
    assert q.line(20, 14, 10, {b.number: b for b in reader.chain}) == 14


def test_the_other_node_is_asked_for_native_coin_only_to_the_addresses_paid_in_it():
    native, token = Found("0xn", -1, "ETH", ALICE, 5), Found("0xu", 0, "USDC", BOB, 5)
    reader = reader_with({12: [native, token]})
    peer = Peer(reader)
    assert quorum(2, peer).line(20, 12, 10, above(reader, 10)) == 12
    assert peer.native == [{ALICE}]


# -- a late address's backfill -------------------------------------------------------------


def test_a_backfill_with_nothing_to_check_asks_no_node():
    reader = reader_with({5: [transfer()]})
    peer = Peer(reader)
    quorum(2, peer).check_backfill([])
    quorum(1, peer).check_backfill([reader.chain[5]])
    assert peer.calls == []


def test_a_backfilled_block_exactly_at_the_depth_on_the_other_node_is_agreed():
    reader = reader_with({10: [transfer()]})
    quorum(2, Peer(reader, tip=10 + REQUIRED - 1)).check_backfill([reader.chain[10]])


def test_a_backfilled_block_one_short_of_the_depth_on_the_other_node_waits():
    reader = reader_with({10: [transfer()]})
    with pytest.raises(NoQuorum):
        quorum(2, Peer(reader, tip=10 + REQUIRED - 2)).check_backfill([reader.chain[10]])


def test_a_backfill_needs_every_other_node_a_quorum_of_three_asks_for():
    reader = reader_with({10: [transfer()]})
    with pytest.raises(NoQuorum):
        quorum(3, Peer(reader), Peer(reader_with({}))).check_backfill([reader.chain[10]])
    quorum(3, Peer(reader), Peer(reader)).check_backfill([reader.chain[10]])


def test_a_node_down_during_a_backfill_is_passed_over_for_the_next():
    reader = reader_with({10: [transfer()]})
    down = Peer(reader)
    down.down = True
    quorum(2, down, Peer(reader)).check_backfill([reader.chain[10]])
    assert down.calls == ["tip"]
