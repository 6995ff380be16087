"""The scanner's cursor, confirmation and reorg logic against an in-memory chain and store."""
from __future__ import annotations

import copy
import hashlib

import pytest

from kassa_chain_watcher.chain import Block, ChainMoved, Found
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.store import State
from kassa_chain_watcher.watchlist import Watchlist
from kassa_common.chains.networks import Network

NET = Network("TESTNET", "evm", 1, 3, 1.0, "http://node", ())
ALICE = "0xa11ce"


class FakeChain:
    def __init__(self, height: int = 10) -> None:
        self.salt = "main"
        self.chain: list[Block] = []
        self.extend(height + 1)

    def _hash(self, n: int, salt: str) -> str:
        return hashlib.sha256(f"{salt}:{n}".encode()).hexdigest()

    def extend(self, n: int = 1, transfers: list[Found] = ()) -> None:
        for i in range(n):
            number = len(self.chain)
            parent = self.chain[-1].hash if self.chain else "0" * 64
            self.chain.append(Block(number, self._hash(number, self.salt), parent, list(transfers) if i == 0 else []))

    def reorg(self, depth: int, transfers: list[Found] = ()) -> None:
        self.salt += "'"
        del self.chain[-depth:]
        self.extend(depth, transfers)

    def tip(self) -> int:
        return len(self.chain) - 1

    def blocks(self, start, end, watched):
        if end > self.tip():
            raise ChainMoved("beyond the tip")
        return [Block(b.number, b.hash, b.parent_hash, [f for f in b.transfers if f.to in watched])
                for b in self.chain[start:end + 1]]

    def hashes(self, numbers):
        return {n: self.chain[n].hash for n in numbers if n <= self.tip()}

    def mempool(self, watched):
        return []


class MemoryStore:
    """Durable state = a deep copy taken at each write, like a committed transaction."""

    def __init__(self, keep: int = 10) -> None:
        self.keep, self.saved = keep, State()

    def load(self) -> State:
        return copy.deepcopy(self.saved)

    def _save(self, state: State) -> None:
        self.saved = copy.deepcopy(state)

    def append(self, state, new, *, confirmed_through=None):
        for b in new:
            state.blocks[b.number] = b
        state.head = new[-1].number if new else state.head
        for n in [n for n in state.blocks if n <= state.head - self.keep]:
            del state.blocks[n]
        self._save(state)

    def confirm_through(self, state, height):
        state.confirmed_through = height
        self._save(state)

    def set_transfers(self, state, block):
        state.blocks[block.number] = block
        self._save(state)

    def rewind(self, state, fork):
        for n in [n for n in state.blocks if n > fork]:
            del state.blocks[n]
        state.head, state.confirmed_through = fork, min(state.confirmed_through, fork)
        self._save(state)


class Bus:
    def __init__(self) -> None:
        self.messages, self.fail = [], False

    def __call__(self, messages):
        if self.fail:
            raise RuntimeError("broker down")
        self.messages.extend(messages)

    def kinds(self):
        return [(m.routing_key.rsplit(".", 1)[1], m.body["confirmations"]) for m in self.messages]


def transfer(tx="0xt1", units=5) -> Found:
    return Found(tx, 0, "USDC", ALICE, units)


@pytest.fixture
def world():
    chain, store, bus = FakeChain(), MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    return chain, store, bus, scanner


def test_a_transfer_is_seen_with_each_confirmation_then_confirmed_once(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    for _ in range(4):
        scanner.tick()
        chain.extend()
    scanner.tick()
    assert bus.kinds() == [("seen", 1), ("seen", 2), ("confirmed", 3)]
    assert len({m.message_id for m in bus.messages}) == 3


def test_transfers_to_unwatched_addresses_are_ignored(world):
    chain, _, bus, scanner = world
    chain.extend(1, [Found("0xt2", 0, "USDC", "0xb0b", 1)])
    chain.extend(3)
    scanner.tick()
    assert bus.messages == []


def test_a_restart_resumes_from_the_stored_cursor_with_the_same_message_ids(world):
    chain, store, bus, scanner = world
    chain.extend(1, [transfer()])
    scanner.tick()
    first = bus.messages[-1].message_id
    restarted = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    restarted.tick()
    assert bus.messages[-1].message_id == first  # a duplicate the settler drops by id
    chain.extend(2)
    restarted.tick()
    assert bus.kinds()[-1] == ("confirmed", 3)


def test_the_confirmed_line_moves_only_after_publishing(world):
    chain, store, bus, scanner = world
    chain.extend(1, [transfer()])
    chain.extend(2)
    bus.fail = True
    with pytest.raises(RuntimeError):
        scanner.tick()
    assert store.saved.confirmed_through < store.saved.head
    bus.fail = False
    Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus).tick()
    assert bus.kinds() == [("confirmed", 3)]


def test_a_reorg_orphans_the_transfers_of_replaced_blocks(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    scanner.tick()
    chain.reorg(1)
    scanner.tick()  # detects the new head hash and rewinds
    scanner.tick()  # scans the replacement block
    assert bus.kinds() == [("seen", 1), ("orphaned", 0)]
    assert scanner.state.head == chain.tip() and scanner.state.head_hash == chain.chain[-1].hash


def test_a_reorg_that_reincludes_the_transfer_reports_it_again(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    scanner.tick()
    chain.reorg(1, [transfer()])
    chain.extend(2)
    for _ in range(3):
        scanner.tick()
    assert bus.kinds() == [("seen", 1), ("orphaned", 0), ("confirmed", 3)]


def test_a_new_block_on_a_different_parent_is_a_reorg(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    scanner.tick()
    chain.reorg(1)
    chain.extend(1)  # the replaced head is now below a new block
    scanner.tick()
    scanner.tick()
    assert ("orphaned", 0) in bus.kinds()


def test_catching_up_goes_straight_to_confirmed_in_batches(world):
    chain, store, bus, _ = world
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=5)
    chain.extend(1, [transfer()])
    chain.extend(20)
    while scanner.tick():
        pass
    assert bus.kinds() == [("confirmed", 3)]
    assert scanner.state.head == chain.tip()


def test_an_address_added_late_is_found_in_blocks_already_scanned(world):
    chain, _, bus, scanner = world
    bob = Found("0xt3", 2, "USDC", "0xb0b", 7)
    chain.extend(1, [bob])
    scanner.tick()
    assert bus.messages == []
    scanner.watchlist.add("0xB0B")
    scanner.tick()
    assert bus.kinds() == [("seen", 1)] and bus.messages[0].body["to"] == "0xb0b"


def test_watchlist_reports_only_addresses_added_after_the_initial_load():
    w = Watchlist()
    w.replace(["0xA", "0xB"], initial=True)
    assert w.take_new() == set() and "0xa" in w
    w.replace(["0xA", "0xB", "0xC"])
    w.add("0xD")
    assert w.take_new() == {"0xc", "0xd"} and w.take_new() == set()
