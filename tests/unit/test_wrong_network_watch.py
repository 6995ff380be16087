"""Wrong network, the watcher's side: which payments' addresses a network's watcher matches,
and where a new payment's address goes when it arrives over the bus."""

from __future__ import annotations

import pytest

from kassa_common.chains.networks import load_registry
from kassa_common.messaging.consumer import Delivered, Reject
from kassa_common.messaging.topology import named
from kassa_chain_watcher.watchlist import PaymentFeed, Watchlist, address_networks

REGISTRY = load_registry({"LOCAL_EVM_2_RPC_URL": "http://127.0.0.1:8546"})
EVM = [n.name for n in REGISTRY if n.kind == "evm"]


def test_an_evm_watcher_also_watches_every_other_evm_networks_payments():
    names = address_networks(REGISTRY.get("LOCAL_EVM_2"), REGISTRY)

    assert names[0] == "LOCAL_EVM_2"
    assert sorted(names) == sorted(EVM)
    assert "BITCOIN" not in names and "BITCOIN_REGTEST" not in names


def test_a_bitcoin_watcher_watches_only_its_own_network():
    assert address_networks(REGISTRY.get("BITCOIN_REGTEST"), REGISTRY) == ("BITCOIN_REGTEST",)


def created(network: str, address: str, test_mode: bool = False) -> Delivered:
    body = {
        "id": "evt_1",
        "event": "payment.created",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "test_mode": test_mode,
        "data": {"network": network, "address": address, "test_mode": test_mode},
    }
    return Delivered("evt_1", "payment.created", body, 1)


def feed_with(*names: str) -> tuple[PaymentFeed, dict[str, Watchlist]]:
    watchlists = {name: Watchlist() for name in names}
    return PaymentFeed(watchlists, evm_networks=EVM), watchlists


def test_a_new_evm_payment_reaches_the_watchlists_of_every_evm_network():
    feed, lists = feed_with("LOCAL_EVM", "LOCAL_EVM_2", "BITCOIN_REGTEST")

    feed.handle(None, created("LOCAL_EVM", "0xAbC0000000000000000000000000000000000001"))

    address = "0xabc0000000000000000000000000000000000001"
    assert address in lists["LOCAL_EVM"] and address in lists["LOCAL_EVM_2"]
    assert address not in lists["BITCOIN_REGTEST"]


def test_a_bitcoin_payment_and_a_test_payment_stay_where_they_belong():
    feed, lists = feed_with("LOCAL_EVM", "LOCAL_EVM_2", "BITCOIN_REGTEST")

    feed.handle(None, created("BITCOIN_REGTEST", "bcrt1qexample"))
    feed.handle(None, created("LOCAL_EVM", "0x00000000000000000000000000000000000000aa", test_mode=True))

    assert "bcrt1qexample" in lists["BITCOIN_REGTEST"]
    assert len(lists["LOCAL_EVM"]) == len(lists["LOCAL_EVM_2"]) == 0


def test_a_malformed_payment_created_is_dead_lettered_not_retried():
    feed, lists = feed_with("LOCAL_EVM")

    with pytest.raises(Reject):
        feed.handle(None, Delivered("evt_2", "payment.created", {"data": {"network": "LOCAL_EVM"}}, 1))

    assert len(lists["LOCAL_EVM"]) == 0


def test_each_watcher_process_has_a_feed_queue_of_its_own_that_expires():
    a, b = named("").watcher_feed("host-1"), named("").watcher_feed("host-2")
    private = named("t1").watcher_feed("host-1")

    assert a.name == "chain-watcher.addresses.host-1" and b.name != a.name
    assert private.name == "t1.chain-watcher.addresses.host-1"
    assert a.bindings == ("payment.created", "refund.claimed", "refund.reorged") and a.expires_ms
    assert all(q.expires_ms is None for q in named("").queues)
