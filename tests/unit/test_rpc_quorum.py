"""``<NETWORK>_RPC_QUORUM=2``: the scanner reads one node, and a transfer is confirmed only
once another node holds the same block at the required depth with the same transfer in it.
One node, lagging, down or lying, delays and never credits. Scripted chains, no I/O."""

from __future__ import annotations

import copy

import pytest
from prometheus_client import REGISTRY

from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcUnavailable, redact
from kassa_chain_watcher.chain import Found
from kassa_chain_watcher.quorum import NoQuorum, Quorum
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.watchlist import Watchlist
from tests.support.scanner import ALICE, Bus, FakeChain, MemoryStore, transfer

URLS = ("http://reader:1", "http://other:2")
NET = Network("QNET", "evm", 1, 3, 1.0, URLS[0], (), rpc_urls=URLS, rpc_quorum=2)


class Twin:
    """Node 2: the same chain as the reader's (a copy that can lag, fork, lie or go down)."""

    def __init__(self, chain: FakeChain) -> None:
        self.chain = copy.deepcopy(chain)
        self.down = False

    def __getattr__(self, name):
        if self.__dict__.get("down") and name in ("tip", "hashes", "history", "blocks"):
            raise RpcUnavailable("http://other:2: ConnectionError")
        return getattr(self.chain, name)


class World:
    def __init__(self, quorum: int = 2) -> None:
        self.reader = FakeChain()
        self.other = Twin(self.reader)
        self.store, self.bus = MemoryStore(), Bus()
        self.pool = NodePool(NET, check=lambda *_: None)
        self.pool.reader = self.pool.nodes[0]  # the scanner reads node 1
        chains = {id(self.pool.nodes[1].rpc): self.other}
        self.quorum = Quorum(NET, self.pool, lambda rpc: chains[id(rpc)], need=quorum)
        self.watchlist = Watchlist(addresses=[ALICE])
        self.scanner = Scanner(NET, self.reader, self.store, self.watchlist, self.bus, quorum=self.quorum)
        self.scanner.tick()

    def both(self, n: int = 1, transfers=()) -> None:
        """Both nodes mine the same ``n`` blocks (the first with ``transfers``)."""
        self.reader.extend(n, list(transfers))
        self.other.chain.extend(n, list(transfers))

    def run(self) -> None:
        while self.scanner.tick():
            pass

    def reports(self) -> list[tuple[str, str, int]]:
        return [
            (m.routing_key.rsplit(".", 1)[1], m.body["tx_hash"], m.body["confirmations"]) for m in self.bus.messages
        ]

    def confirmed(self, tx: str) -> bool:
        return ("confirmed", tx, NET.required_confirmations) in self.reports()


def node2(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"network": NET.name, "node": "2", "url": redact(URLS[1])}) or 0


@pytest.fixture
def w() -> World:
    return World()


def test_two_nodes_that_agree_confirm_at_the_required_depth_as_one_node_would(w):
    w.both(1, [transfer("0xt")])
    for _ in range(NET.required_confirmations - 1):
        w.run()
        w.both()
    w.run()
    assert w.reports() == [("seen", "0xt", 1), ("seen", "0xt", 2), ("confirmed", "0xt", 3)]


def test_a_lagging_node_holds_the_confirmation_back_until_it_has_the_block_at_the_depth(w):
    w.both(1, [transfer("0xt")])
    w.reader.extend(NET.required_confirmations + 5)  # node 2 stays behind
    w.run()
    assert not w.confirmed("0xt")
    assert w.reports()[-1][0] == "seen" and w.reports()[-1][2] == NET.required_confirmations - 1
    assert node2("kassa_rpc_node_lag_blocks") == NET.required_confirmations + 5
    w.other.chain.extend(NET.required_confirmations - 1)  # now it holds the block 3 deep
    w.run()
    assert w.confirmed("0xt")
    assert w.store.saved.confirmed_through == w.other.chain.tip() - NET.required_confirmations + 1


def test_a_reader_on_a_fork_no_other_node_has_never_confirms_its_transfer(w):
    before = node2("kassa_rpc_node_disagreements_total")
    w.reader.extend(1, [transfer("0xforged")])  # only the reader has this block (a lie, or a fork)
    w.reader.extend(NET.required_confirmations + 3)
    w.other.chain.salt = "honest"
    w.other.chain.extend(NET.required_confirmations + 4)
    for _ in range(3):
        w.run()
    assert not w.confirmed("0xforged")
    assert node2("kassa_rpc_node_disagreements_total") > before


def test_a_transfer_forged_inside_a_real_block_is_never_confirmed(w):
    w.both(1)
    w.reader.chain[-1].transfers.append(transfer("0xforged"))  # same block hash, one more "log"
    w.both(NET.required_confirmations + 3)
    w.run()
    assert not w.confirmed("0xforged")
    assert ("seen", "0xforged", NET.required_confirmations - 1) in w.reports()
    w.both(1, [transfer("0xreal")])  # a real transfer after it is held back too: the line cannot pass the lie
    w.both(NET.required_confirmations)
    w.run()
    assert not w.confirmed("0xreal")


def test_an_amount_forged_by_the_reader_is_never_confirmed(w):
    w.reader.extend(1, [transfer("0xt", units=5_000_000)])  # the same block (scripted hashes follow
    w.other.chain.extend(1, [transfer("0xt", units=5)])  # the height), the reader lies about the amount
    w.both(NET.required_confirmations + 1)
    assert w.reader.chain[-1].hash == w.other.chain.chain[-1].hash
    w.run()
    assert not w.confirmed("0xt")


def test_with_the_other_node_down_nothing_is_confirmed_and_it_is_set_aside(w):
    w.other.down = True
    w.both(1, [transfer("0xt")])
    w.both(NET.required_confirmations + 2)
    w.run()
    assert not w.confirmed("0xt")
    assert w.pool.nodes[1].until > 0 and node2("kassa_rpc_node_up") == 0
    w.other.down = False
    w.pool.nodes[1].until = 0  # its backoff passed
    w.run()
    assert w.confirmed("0xt")


def test_a_quorum_of_one_confirms_from_the_reader_alone():
    w = World(quorum=1)
    w.reader.extend(1, [transfer("0xt")])
    w.reader.extend(NET.required_confirmations)
    w.run()
    assert w.confirmed("0xt")


def test_a_backfill_confirms_only_what_the_other_node_reads_in_the_same_block(w):
    w.reader.extend(1, [Found("0xold", 2, "USDC", "0xb0b", 7)])  # the reader says 0xb0b was paid in a block
    w.other.chain.extend(1)  # long confirmed, a real block that holds no such transfer
    w.both(40)
    w.run()
    w.watchlist.add("0xB0B")
    with pytest.raises(NoQuorum):
        w.scanner.tick()
    assert not w.confirmed("0xold") and "0xb0b" in w.watchlist.take_new()  # tried again later


def test_a_backfill_that_both_nodes_read_the_same_is_confirmed(w):
    w.both(1, [Found("0xold", 2, "USDC", "0xb0b", 7)])
    w.both(40)
    w.run()
    w.watchlist.add("0xB0B")
    w.scanner.tick()
    assert w.confirmed("0xold")


# -- three nodes: the line moves as far as enough of them agree ---------------------------

URLS3 = ("http://reader:1", "http://other:2", "http://third:3")


class World3(World):
    """The reader and two other nodes, with a quorum of ``need``."""

    def __init__(self, need: int) -> None:
        self.net = Network("QNET3", "evm", 1, 3, 1.0, URLS3[0], (), rpc_urls=URLS3, rpc_quorum=need)
        self.reader = FakeChain()
        self.other, self.third = Twin(self.reader), Twin(self.reader)
        self.store, self.bus = MemoryStore(), Bus()
        self.pool = NodePool(self.net, check=lambda *_: None)
        self.pool.reader = self.pool.nodes[0]
        chains = {id(self.pool.nodes[1].rpc): self.other, id(self.pool.nodes[2].rpc): self.third}
        self.quorum = Quorum(self.net, self.pool, lambda rpc: chains[id(rpc)])
        self.watchlist = Watchlist(addresses=[ALICE])
        self.scanner = Scanner(self.net, self.reader, self.store, self.watchlist, self.bus, quorum=self.quorum)
        self.scanner.tick()

    def all(self, n: int = 1, transfers=()) -> None:
        for chain in (self.reader, self.other.chain, self.third.chain):
            chain.extend(n, list(transfers))


def waits(net: str) -> float:
    return REGISTRY.get_sample_value("kassa_rpc_quorum_waits_total", {"network": net}) or 0


@pytest.mark.parametrize("lagging", ["other", "third"])
def test_a_quorum_of_two_among_three_confirms_with_the_node_that_agrees_whichever_lags(lagging):
    w = World3(need=2)
    before = waits("QNET3")
    w.all(1, [transfer("0xt")])
    for chain in (w.reader, (w.third if lagging == "other" else w.other).chain):
        chain.extend(NET.required_confirmations)  # the lagging node stays behind
    w.run()
    assert w.confirmed("0xt")
    assert w.store.saved.confirmed_through == w.reader.tip() - NET.required_confirmations + 1
    assert waits("QNET3") == before  # never held back: two nodes always agreed


def test_a_quorum_of_three_waits_for_the_lagging_node_and_counts_the_wait():
    w = World3(need=3)
    before = waits("QNET3")
    w.all(1, [transfer("0xt")])
    w.reader.extend(NET.required_confirmations)
    w.other.chain.extend(NET.required_confirmations)  # the third node stays behind
    w.run()
    assert not w.confirmed("0xt")
    assert waits("QNET3") > before
    w.third.chain.extend(NET.required_confirmations)
    w.run()
    assert w.confirmed("0xt")
