"""The scanner's cursor, confirmation and reorg logic against an in-memory chain and store."""

from __future__ import annotations

import pytest

from kassa_chain_watcher.chain import Found
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.store import State
from kassa_chain_watcher.watchlist import Watchlist
from tests.support.scanner import ALICE, NET, Bus, FakeChain, MemoryStore, RacingChain, run_until_idle, transfer


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


def test_one_transaction_paying_several_addresses_reports_each(world):
    """A batch payout's internal credits share their transaction and ``log_index`` -2: each
    recipient's is a transfer of its own, reported once per status, with its own id."""
    chain, _, bus, scanner = world
    scanner.watchlist.add("0xb0b")
    chain.extend(1, [Found("0xbatch", -2, "ETH", ALICE, 1), Found("0xbatch", -2, "ETH", "0xb0b", 2)])
    chain.extend(2)
    scanner.tick()
    scanner.tick()
    assert sorted((m.body["to"], m.body["log_index"]) for m in bus.messages) == [("0xa11ce", -2), ("0xb0b", -2)]
    assert len({m.message_id for m in bus.messages}) == 2


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


def test_a_catch_up_longer_than_the_blocks_kept_reports_every_transfer_in_order(world):
    chain, store, bus, _ = world
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=500)
    for i in range(30):  # 30 transfers over 300 blocks, read in one batch; 10 blocks kept
        chain.extend(1, [transfer(tx=f"0xt{i}")])
        chain.extend(9)
    while scanner.tick():
        pass
    assert [m.body["tx_hash"] for m in bus.messages] == [f"0xt{i}" for i in range(30)]
    assert {k for k, _ in bus.kinds()} == {"confirmed"}
    assert store.saved.confirmed_through == chain.tip() - NET.required_confirmations + 1


def test_the_cursor_never_passes_transfers_it_could_not_publish_in_a_long_catch_up(world):
    chain, store, bus, _ = world
    chain.extend(1, [transfer()])
    chain.extend(100)
    bus.fail = True
    with pytest.raises(RuntimeError):
        Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=500).tick()
    bus.fail = False
    Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=500).tick()
    assert bus.kinds() == [("confirmed", 3)]


def test_a_late_address_is_backfilled_from_its_payments_creation_block(world):
    chain, store, bus, scanner = world
    store.created["0xb0b"] = chain.tip()
    chain.extend(1, [Found("0xt3", 2, "USDC", "0xb0b", 7, 0)])
    chain.extend(40)  # confirmed, and out of the 10 blocks kept
    while scanner.tick():
        pass
    assert bus.messages == []
    scanner.watchlist.add("0xB0B")
    scanner.tick()
    assert bus.kinds() == [("confirmed", 3)] and bus.messages[0].body["position"] == 0


def test_a_caught_up_watcher_records_when_it_read_the_tip(world):
    chain, store, _, scanner = world
    chain.extend(5)
    while scanner.tick():
        pass
    assert store.saved.scanned_at is not None and store.saved.head == chain.tip()


def test_watchlist_reports_only_addresses_added_after_the_initial_load():
    w = Watchlist()
    w.replace(["0xA", "0xB"], initial=True)
    assert w.take_new() == set() and "0xa" in w
    w.replace(["0xA", "0xB", "0xC"])
    w.add("0xD")
    assert w.take_new() == {"0xc", "0xd"} and w.take_new() == set()


def test_a_mempool_transfer_dropped_while_the_watcher_was_down_is_orphaned_after_the_restart(world):
    chain, store, bus, scanner = world
    chain.pool = [transfer("0xunconfirmed")]
    scanner.tick()
    assert bus.kinds() == [("seen", 0)]
    chain.pool = []  # dropped (or replaced) while no watcher runs
    restarted = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    restarted.tick()
    restarted.tick()
    assert bus.kinds() == [("seen", 0), ("orphaned", 0)]
    assert store.mempool == {}


def test_a_replaced_transaction_orphans_the_first_and_reports_the_replacement(world):
    chain, _, bus, scanner = world
    chain.pool = [transfer("0xfirst")]
    scanner.tick()
    chain.pool = [transfer("0xreplacement")]
    scanner.tick()
    scanner.tick()
    assert [(m.routing_key.rsplit(".", 1)[1], m.body["tx_hash"]) for m in bus.messages] == [
        ("seen", "0xfirst"),
        ("seen", "0xreplacement"),
        ("orphaned", "0xfirst"),
    ]


def test_a_mempool_transfer_mined_in_a_block_not_read_yet_is_not_reported_dropped():
    chain, store, bus = FakeChain(), MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=1)
    scanner.tick()
    chain.pool = [transfer("0xt")]
    scanner.tick()
    chain.pool = []
    chain.extend(3)
    chain.extend(1, [transfer("0xt")])  # mined 4 blocks ahead of the watcher, which reads one per tick
    while scanner.tick():
        pass
    kinds = [(m.routing_key.rsplit(".", 1)[1], m.body["tx_hash"]) for m in bus.messages]
    assert ("orphaned", "0xt") not in kinds and kinds[0] == ("seen", "0xt") and ("seen", "0xt") in kinds[1:]


def test_a_reorg_between_the_head_check_and_reading_the_next_blocks_never_confirms_the_orphaned_transfer():
    chain, store, bus = RacingChain(), MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    chain.extend(1, [transfer("0xorphaned")])
    scanner.tick()
    assert bus.kinds() == [("seen", 1)]
    chain.extend(1)  # the watcher will read this block next…
    chain.after_hash_check = lambda: chain.reorg(2)  # …but the block below it is replaced once its hash was checked
    for _ in range(2 + NET.required_confirmations):
        scanner.tick()
        chain.extend()
    kinds = [(m.routing_key.rsplit(".", 1)[1], m.body["tx_hash"]) for m in bus.messages]
    assert ("confirmed", "0xorphaned") not in kinds
    assert ("orphaned", "0xorphaned") in kinds
    assert scanner.state.blocks[scanner.state.head].hash == chain.chain[scanner.state.head].hash


def test_a_reorg_deeper_than_the_confirmations_reports_the_confirmed_transfer_reorged_once(world):
    from prometheus_client import REGISTRY

    def metric(name):
        return REGISTRY.get_sample_value(name, {"network": NET.name}) or 0

    chain, _, bus, scanner = world
    chain.extend(1, [transfer("0xlost")])
    chain.extend(NET.required_confirmations)
    while scanner.tick():
        pass
    assert bus.kinds()[-1] == ("confirmed", 3)
    reorgs, lost = metric("kassa_chain_deep_reorgs_total"), metric("kassa_chain_transfers_reorged_total")
    chain.reorg(NET.required_confirmations + 2)  # replaces the transfer's block and every block above it
    while scanner.tick():
        pass
    reported = [(m.routing_key, m.body["tx_hash"], m.body["confirmations"]) for m in bus.messages]
    assert reported[-1] == ("chain.transfer.reorged", "0xlost", NET.required_confirmations)
    assert [r[0] for r in reported].count("chain.transfer.reorged") == 1
    assert metric("kassa_chain_deep_reorgs_total") == reorgs + 1
    assert metric("kassa_chain_transfers_reorged_total") == lost + 1
    assert scanner.state.head == chain.tip() and scanner.state.head_hash == chain.chain[-1].hash


def test_a_transfer_lost_in_a_deep_reorg_and_mined_again_is_confirmed_again(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer("0xback")])
    chain.extend(NET.required_confirmations)
    while scanner.tick():
        pass
    chain.reorg(NET.required_confirmations + 1, [transfer("0xback")])
    chain.extend(NET.required_confirmations)
    while scanner.tick():
        pass
    keys = [m.routing_key.rsplit(".", 1)[1] for m in bus.messages]
    assert keys == ["confirmed", "reorged", "confirmed"]
    assert bus.messages[0].body["block_hash"] != bus.messages[-1].body["block_hash"]


def test_a_transfer_a_backfill_confirmed_is_reported_reorged_too_when_a_deep_reorg_takes_its_block(world):
    chain, store, bus, scanner = world
    store.created["0xb0b"] = chain.tip()
    chain.extend(1, [Found("0xlate", 2, "USDC", "0xb0b", 7, 0)])
    chain.extend(NET.required_confirmations + 1)  # confirmed, still among the blocks kept
    while scanner.tick():
        pass
    scanner.watchlist.add("0xB0B")
    scanner.tick()
    assert bus.kinds() == [("confirmed", 3)]
    chain.reorg(NET.required_confirmations + 3)
    while scanner.tick():
        pass
    assert [(m.routing_key, m.body["tx_hash"]) for m in bus.messages][-1] == ("chain.transfer.reorged", "0xlate")


def test_a_transaction_back_in_the_mempool_after_it_was_dropped_is_reported_again_under_new_ids(world):
    chain, _, bus, scanner = world
    for _ in range(2):  # in, dropped (two looks without it), back in, dropped again
        chain.pool = [transfer("0xagain")]
        scanner.tick()
        chain.pool = []
        scanner.tick()
        scanner.tick()
    assert bus.kinds() == [("seen", 0), ("orphaned", 0)] * 2
    assert len({m.message_id for m in bus.messages}) == 4  # none taken for an earlier report


def test_every_report_is_recorded_once_published_and_a_watermark_follows_covering_it(world):
    chain, store, bus, scanner = world
    chain.extend(1, [transfer()])
    scanner.tick()
    assert store.ledger == [m.message_id for m in bus.messages]  # recorded after publishing
    last = bus.watermarks[-1].body
    assert last["through"] == len(store.ledger) and last["scanned_at"] is not None  # caught up: the time too


def test_a_watermark_never_claims_a_report_the_broker_did_not_confirm(world):
    chain, store, bus, scanner = world
    marks = len(bus.watermarks)
    chain.extend(1, [transfer()])
    bus.fail = True
    with pytest.raises(RuntimeError):
        scanner.tick()
    assert store.ledger == [] and len(bus.watermarks) == marks


# -- the edges: first start, a shorter chain, deep reorgs, late addresses ------------------


def test_a_first_start_begins_required_plus_one_blocks_below_the_tip():
    chain = FakeChain(height=5)
    chain.extend(1, [transfer(tx="0xbefore")])  # block 6: at the starting line, not read
    chain.extend(1, [transfer(tx="0xafter")])  # block 7: the first block read
    chain.extend(3)  # tip 10
    store, bus = MemoryStore(), Bus()
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    assert min(store.saved.blocks) == 10 - (NET.required_confirmations + 1) + 1
    assert [(m.body["tx_hash"], k) for m, (k, _) in zip(bus.messages, bus.kinds(), strict=True)] == [
        ("0xafter", "confirmed")
    ]
    assert store.saved.confirmed_through == 10 - NET.required_confirmations + 1


def test_a_cursor_above_a_shorter_chain_with_no_block_kept_steps_back_to_its_tip():
    chain, store, bus = FakeChain(height=10), MemoryStore(), Bus()
    store.saved = State(head=20, confirmed_through=20)  # e.g. a chain reset below the cursor
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus)
    scanner.tick()
    assert (store.saved.head, store.saved.confirmed_through) == (10, 10)
    chain.extend(1, [transfer()])
    chain.extend(2)
    run_until_idle(scanner)
    assert bus.kinds() == [("confirmed", 3)]


def test_a_chain_that_got_shorter_than_the_head_orphans_what_it_lost(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    chain.extend(1)
    scanner.tick()
    del chain.chain[-2:]  # the node now serves a shorter chain without those two blocks
    run_until_idle(scanner)
    assert bus.kinds() == [("seen", 2), ("orphaned", 0)]
    assert scanner.state.head == chain.tip()


def test_a_reorg_below_the_confirmed_line_reports_the_confirmed_transfer_reorged(world):
    chain, _, bus, scanner = world
    from kassa_chain_watcher import metrics

    deep = metrics.DEEP_REORGS.labels(network=NET.name)
    before = deep._value.get()
    chain.extend(1, [transfer()])
    chain.extend(2)
    scanner.tick()
    assert bus.kinds() == [("confirmed", 3)]
    chain.reorg(4)  # replaces the transfer's block, past the required 3 confirmations
    run_until_idle(scanner)
    assert bus.kinds() == [("confirmed", 3), ("reorged", 3)]
    assert deep._value.get() == before + 1
    assert scanner.state.head == chain.tip()


def test_a_reorg_deeper_than_the_blocks_kept_resumes_below_them_and_finds_the_new_transfers(world):
    chain, store, bus, scanner = world
    chain.extend(30)
    run_until_idle(scanner)
    kept = sorted(store.saved.blocks)
    chain.reorg(chain.tip() - kept[0] + 1, [transfer(tx="0xnew")])  # every kept block replaced
    chain.extend(3)
    run_until_idle(scanner)
    assert [m.body["tx_hash"] for m in bus.messages] == ["0xnew"]
    assert bus.kinds() == [("confirmed", 3)]
    assert bus.messages[0].body["block_number"] == kept[0]


def test_a_reorg_above_a_seen_transfer_does_not_report_it_again(world):
    chain, _, bus, scanner = world
    chain.extend(1, [transfer()])
    chain.extend(1)
    scanner.tick()
    assert bus.kinds() == [("seen", 2)]
    chain.reorg(1)  # only the block above the transfer's
    run_until_idle(scanner)
    assert bus.kinds() == [("seen", 2)]  # unchanged: no news
    chain.extend(1)
    run_until_idle(scanner)
    assert bus.kinds() == [("seen", 2), ("confirmed", 3)]


def test_a_late_address_is_backfilled_from_its_payments_creation_block_below_the_blocks_kept(world):
    chain, store, bus, scanner = world
    bob = Found("0xt9", 0, "USDC", "0xb0b", 7)
    created = chain.tip() + 1
    chain.extend(1, [bob])
    chain.extend(30)
    run_until_idle(scanner)
    chain.extend(1)
    run_until_idle(scanner)  # the blocks kept are pruned on the next append
    assert created < min(store.saved.blocks) and bus.messages == []
    store.created["0xb0b"] = created - 1
    scanner.watchlist.add("0xb0b")
    run_until_idle(scanner)
    assert bus.kinds() == [("confirmed", 3)] and bus.messages[0].body["tx_hash"] == "0xt9"


def test_no_watermark_while_catching_up_one_when_caught_up_then_none_while_idle(world):
    chain, store, bus, _ = world
    scanner = Scanner(NET, chain, store, Watchlist(addresses=[ALICE]), bus, batch_blocks=5)
    chain.extend(1, [transfer()])
    chain.extend(20)
    marks = len(bus.watermarks)
    assert scanner.tick() is True  # 5 of 21 blocks read: not caught up
    assert len(bus.watermarks) == marks
    run_until_idle(scanner)
    assert len(bus.watermarks) == marks + 1
    assert bus.watermarks[-1].body["through"] == len(store.ledger) == 1
    for _ in range(3):  # idle, within SCANNED_AT_EVERY: nothing new to cover, no new watermark
        assert scanner.tick() is False
    assert len(bus.watermarks) == marks + 1


def test_an_idle_watcher_records_its_progress_at_most_every_scanned_at_every(world, monkeypatch):
    _chain, store, bus, scanner = world
    import kassa_chain_watcher.scanner as scanner_module

    first = store.saved.scanned_at
    scanner.tick()
    assert store.saved.scanned_at == first  # within the interval: not written again
    monkeypatch.setattr(scanner_module, "SCANNED_AT_EVERY", 0.0)
    scanner.tick()
    assert store.saved.scanned_at > first and bus.watermarks[-1].body["scanned_at"] is not None
