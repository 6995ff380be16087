"""The scanner at its edges, against the in-memory chain and store of test_chain_scanner:
a chain shorter than the start, reorgs exactly at the confirmed line or deeper than the
blocks kept, a block that comes back after a reorg, late addresses with no block kept, the
idle watcher's clock, and what ``tick`` says after a rewind."""

from __future__ import annotations

from datetime import timedelta

import pytest

import kassa_chain_watcher.scanner as scanner_module
from kassa_chain_watcher import metrics
from kassa_chain_watcher.chain import ChainMoved, Found
from kassa_chain_watcher.scanner import SCANNED_AT_EVERY, Scanner
from kassa_chain_watcher.store import State
from kassa_chain_watcher.watchlist import Watchlist
from tests.support.scanner import ALICE, NET, Bus, FakeChain, MemoryStore, RacingChain, run_until_idle, transfer

pytestmark = pytest.mark.unit

BOB = "0xb0b"
REQUIRED = NET.required_confirmations


@pytest.fixture
def world():
    chain, store, bus = FakeChain(), MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    return chain, store, bus, scanner


def reports(bus) -> list[tuple[str, str, int | None]]:
    return [(m.routing_key.rsplit(".", 1)[1], m.body["tx_hash"], m.body["block_number"]) for m in bus.messages]


def test_a_first_start_on_a_chain_shorter_than_the_start_reads_it_from_block_zero():
    chain = FakeChain(height=2)
    chain.chain[0].transfers.append(transfer("0xgenesis"))
    store, bus = MemoryStore(), Bus()
    Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus).tick()
    assert reports(bus) == [("confirmed", "0xgenesis", 0)]
    assert min(store.saved.blocks) == 0


# -- what tick says: more to do right away after a rewind --------------------------------


def test_tick_asks_to_read_again_right_after_a_reorg_found_on_the_next_blocks_parent():
    chain, store, bus = RacingChain(), MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    run_until_idle(scanner)
    chain.extend(1)
    chain.after_hash_check = lambda: chain.reorg(2)  # the head passes its check, then is replaced
    assert scanner.tick() is True
    assert store.saved.head < chain.tip()


def test_tick_asks_to_read_again_when_the_chain_moved_while_it_read(world, monkeypatch):
    chain, _, _, scanner = world
    chain.extend(2)

    def moved(*_args):
        raise ChainMoved("block 12 is gone")

    monkeypatch.setattr(chain, "blocks", moved)
    assert scanner.tick() is True


# -- reorgs at the edges -----------------------------------------------------------------


def confirmed_transfer_at_the_line(world) -> int:
    """A transfer in the block the confirmed line stands on; its height."""
    chain, store, bus, scanner = world
    chain.extend(1, [transfer()])
    at = chain.tip()
    chain.extend(REQUIRED - 1)
    run_until_idle(scanner)
    assert store.saved.confirmed_through == at and bus.kinds() == [("confirmed", REQUIRED)]
    return at


def test_a_reorg_of_just_the_blocks_above_the_confirmed_line_is_no_deep_reorg(world):
    chain, _, bus, scanner = world
    at = confirmed_transfer_at_the_line(world)
    deep = metrics.DEEP_REORGS.labels(network=NET.name)
    before = deep._value.get()
    chain.reorg(chain.tip() - at)  # the fork is the confirmed line itself
    run_until_idle(scanner)
    assert deep._value.get() == before
    assert bus.kinds() == [("confirmed", REQUIRED)]


def test_a_deep_reorg_counts_the_transfer_in_the_block_on_the_confirmed_line_as_lost(world):
    chain, _, bus, scanner = world
    at = confirmed_transfer_at_the_line(world)
    lost = metrics.TRANSFERS_REORGED.labels(network=NET.name)
    before = lost._value.get()
    chain.reorg(chain.tip() - at + 1)  # the fork just below it
    run_until_idle(scanner)
    assert lost._value.get() == before + 1
    assert bus.kinds() == [("confirmed", REQUIRED), ("reorged", REQUIRED)]


def test_a_reorg_deeper_than_the_blocks_kept_rewinds_to_just_below_them_at_once(world):
    chain, store, _, scanner = world
    chain.extend(30)
    run_until_idle(scanner)
    kept = sorted(store.saved.blocks)
    chain.reorg(chain.tip() - kept[0] + 1)
    assert scanner.tick() is True
    assert store.saved.head == kept[0] - 1 and store.saved.blocks == {}


def test_a_block_that_comes_back_after_a_reorg_is_reported_again(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    run_until_idle(scanner)
    chain.reorg(1)  # replaced by a block without it
    run_until_idle(scanner)
    assert bus.kinds() == [("seen", 1), ("orphaned", 0)]
    chain.salt = "main"  # and back to the first block, the same hash
    del chain.chain[-1:]
    chain.extend(1, [transfer()])
    run_until_idle(scanner)
    assert bus.kinds() == [("seen", 1), ("orphaned", 0), ("seen", 1)]


def test_a_confirmed_block_leaves_nothing_in_the_reports_remembered(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    run_until_idle(scanner)
    assert scanner._published  # seen: remembered so that it is not sent again
    chain.extend(REQUIRED - 1)
    run_until_idle(scanner)
    assert bus.kinds()[-1] == ("confirmed", REQUIRED) and scanner._published == {}


# -- late addresses with no block kept ---------------------------------------------------


class HistoryChain(FakeChain):
    """Records the native-coin addresses each history read asks for."""

    def history(self, start, end, addresses, native=()):
        self.asked = [*getattr(self, "asked", []), (start, end, set(addresses), set(native))]
        return super().history(start, end, addresses, native)


def nothing_kept(paid_at: int, created: int | None, height: int = 10):
    """A scanner at ``height`` (confirmed there) that keeps no block; BOB paid at ``paid_at``."""
    chain, store, bus = HistoryChain(height), MemoryStore(), Bus()
    chain.chain[paid_at].transfers.append(Found("0xbob", 0, "USDC", BOB, 7))
    store.saved = State(head=height, confirmed_through=height)
    store.created[BOB] = created
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    scanner.watchlist.add(BOB)
    scanner.tick()
    return chain, bus


def test_a_late_address_with_no_creation_block_and_no_block_kept_reads_nothing():
    chain, bus = nothing_kept(paid_at=9, created=None)
    assert bus.messages == [] and getattr(chain, "asked", []) == []


def test_a_late_address_created_at_block_zero_is_backfilled_from_there():
    _, bus = nothing_kept(paid_at=0, created=0)
    assert reports(bus) == [("confirmed", "0xbob", 0)]


def test_a_late_address_created_at_the_head_on_the_confirmed_line_is_confirmed():
    chain, bus = nothing_kept(paid_at=10, created=10)
    assert reports(bus) == [("confirmed", "0xbob", 10)]
    assert chain.asked == [(10, 10, {BOB}, set())]


def test_a_backfill_asks_for_native_coin_only_to_the_new_addresses_that_take_it():
    chain = HistoryChain()
    store, bus = MemoryStore(), Bus()
    watchlist = Watchlist(addresses=[ALICE])
    watchlist.add(ALICE, native=True)
    watchlist.take_new()
    scanner = Scanner(NET, chain, store, watchlist, bus)
    scanner.tick()
    watchlist.add(BOB)
    watchlist.add("0xca7", native=True)
    scanner.tick()
    assert [native for *_, native in chain.asked] == [{"0xca7"}]


# -- an idle watcher's clock and the quorum ------------------------------------------------


def test_an_idle_watcher_records_its_progress_once_exactly_scanned_at_every_passed(world, monkeypatch):
    _, store, _, scanner = world
    first = store.saved.scanned_at
    monkeypatch.setattr(scanner_module, "utcnow", lambda: first + timedelta(seconds=SCANNED_AT_EVERY))
    scanner.tick()
    assert store.saved.scanned_at == first + timedelta(seconds=SCANNED_AT_EVERY)


class Agreeing:
    """A quorum that agrees with the reader, recording what it is asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []

    def line(self, tip, line, floor, blocks):
        self.asked.append((line, floor))
        return line


def test_an_idle_scanner_asks_the_other_nodes_nothing():
    chain, store, bus, quorum = FakeChain(), MemoryStore(), Bus(), Agreeing()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, quorum=quorum)
    chain.extend(1, [transfer()])
    chain.extend(REQUIRED)
    run_until_idle(scanner)
    for _ in range(3):
        scanner.tick()
    assert quorum.asked and all(line > floor for line, floor in quorum.asked)
    assert bus.kinds()[-1] == ("confirmed", REQUIRED)
