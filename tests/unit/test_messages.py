"""The bus contracts: each message survives its own wire format, and ids are stable."""

from __future__ import annotations

import json

import pytest

from kassa_common.messaging.messages import AddressFeed, EventEnvelope, EventType, RoutingKey, TransferReport
from kassa_common.statuses import PaymentStatus, TransferStatus


def report(status=TransferStatus.SEEN, block_hash="0xblock", confirmations=1) -> TransferReport:
    return TransferReport(status, "BASE", "0xt1", 0, "USDC", "0xa11ce", 5_000_000, 7, block_hash, confirmations)


def test_message_ids_are_deterministic_and_fit_the_consumer_table():
    a = report().default_id()
    assert a == report().default_id()
    assert a != report(confirmations=2).default_id()
    assert a != report(block_hash="0xother").default_id()
    assert a != report(status=TransferStatus.CONFIRMED).default_id()
    assert len(a) <= 100


def test_the_transfers_of_one_transaction_to_several_addresses_are_several_messages():
    """A batch payout's internal credits: same transaction, same ``log_index`` -2, one per
    recipient; and a second credit to the same recipient ranks -3."""

    def native(to, index=-2):
        return TransferReport(TransferStatus.CONFIRMED, "BASE", "0xt1", index, "ETH", to, 5, 7, "0xblock", 3)

    ids = {native("0xa11ce").default_id(), native("0xb0b").default_id(), native("0xa11ce", -3).default_id()}
    assert len(ids) == 3
    assert native("0xA11CE").default_id() == native("0xa11ce").default_id()  # the same address in either case


@pytest.mark.parametrize(
    "status, key",
    [
        (TransferStatus.SEEN, "chain.transfer.seen"),
        (TransferStatus.CONFIRMED, "chain.transfer.confirmed"),
        (TransferStatus.ORPHANED, "chain.transfer.orphaned"),
    ],
)
def test_a_transfer_report_round_trips_through_json_under_its_routing_key(status, key):
    sent = report(status)
    message = sent.to_message()
    assert message.routing_key == key and message.message_id == sent.default_id()
    wire = json.loads(json.dumps(message.body))
    assert wire["amount_units"] == "5000000"  # exact integers travel as strings
    assert TransferReport.from_message(key, wire) == sent


def test_a_simulated_report_travels_under_its_own_key_and_comes_back_simulated():
    sent = TransferReport(
        TransferStatus.CONFIRMED, "BASE", "test_tx_1", 0, "USDC", "0xa11ce", 5, confirmations=1, simulated=True
    )
    message = sent.to_message("evt_1")
    assert message.routing_key == RoutingKey.TEST_TRANSFER_CONFIRMED == "test.transfer.confirmed"
    assert TransferReport.from_message(message.routing_key, json.loads(json.dumps(message.body))) == sent


def test_a_transfer_report_keeps_an_explicit_message_id():
    assert report().to_message("evt_1").message_id == "evt_1"


@pytest.mark.parametrize(
    "key, body",
    [
        ("chain.transfer.lost", report().body()),
        ("chain.transfer.seen", {"network": "BASE"}),
        ("chain.transfer.seen", {**report().body(), "amount_units": "five"}),
    ],
)
def test_anything_else_is_refused(key, body):
    with pytest.raises((KeyError, ValueError, TypeError)):
        TransferReport.from_message(key, body)


def test_names_are_case_insensitive_on_input():
    body = {**report().body(), "network": "base", "token": "usdc"}
    got = TransferReport.from_message(RoutingKey.TRANSFER_SEEN, body)
    assert (got.network, got.token) == ("BASE", "USDC")


def test_a_payment_event_is_the_webhook_envelope_and_feeds_the_watcher():
    event = EventEnvelope(
        "evt_1",
        EventType.PAYMENT_CREATED,
        "2026-01-01T00:00:00.000Z",
        False,
        {"payment_id": "p1", "address": "0xAbC", "network": "base", "status": PaymentStatus.PENDING},
    )
    message = event.to_message()
    wire = json.loads(json.dumps(message.body))
    assert list(wire) == ["id", "event", "timestamp", "test_mode", "data"]
    assert (message.message_id, message.routing_key) == ("evt_1", "payment.created")
    assert EventEnvelope.from_message(message.routing_key, wire) == EventEnvelope(
        "evt_1", EventType.PAYMENT_CREATED, "2026-01-01T00:00:00.000Z", False, wire["data"]
    )
    assert AddressFeed.from_message(message.routing_key, wire) == AddressFeed("BASE", "0xAbC", False)


def test_the_address_feed_takes_only_payment_created_with_an_address():
    body = EventEnvelope("evt_2", EventType.PAYMENT_COMPLETED, "t", False, {"address": "0x1"}).body()
    with pytest.raises(ValueError):
        AddressFeed.from_message("payment.completed", body)
    with pytest.raises(ValueError):
        AddressFeed.from_message("payment.created", {**body, "event": "payment.created", "data": {}})


def test_statuses_compare_equal_to_what_the_database_and_api_hold():
    assert PaymentStatus.PARTIALLY_PAID == "PARTIALLY_PAID"
    assert {"SEEN": 1}[TransferStatus.SEEN] == 1
    assert json.dumps([PaymentStatus.COMPLETED]) == '["COMPLETED"]'


def test_a_transfer_reports_sender_travels_and_older_messages_have_none():
    from kassa_common.messaging.messages import TransferReport
    from kassa_common.statuses import TransferStatus

    r = TransferReport(
        TransferStatus.SEEN, "LOCAL_EVM", "0x" + "ab" * 32, 0, "USDC", "0x" + "11" * 20, 5, sender="0x" + "22" * 20
    )
    message = r.to_message()
    assert TransferReport.from_message(message.routing_key, message.body).sender == "0x" + "22" * 20
    old = {k: v for k, v in message.body.items() if k != "sender"}
    assert TransferReport.from_message(message.routing_key, old).sender is None
    assert r.default_id() == TransferReport(**{**r.__dict__, "sender": None}).default_id()  # not part of its identity
