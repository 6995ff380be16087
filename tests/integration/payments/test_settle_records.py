"""What the settler writes on a new transfer's record: whether it counts (the payment's own
network and token, both) and whether the sweeper owes it a sweep (a live forwarder deposit
only: a payment with a settlement address, not in test mode)."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Payment, Transfer
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.transfers import report, settle, settler_batches  # noqa: F401 (autouse)

SETTLEMENT = "0x" + "5e" * 20
DUE = 12_340_000


def record_of(sessions, p) -> Transfer:
    with sessions() as s:
        return s.scalars(sa.select(Transfer).where(Transfer.payment_id == uuid.UUID(p["id"]))).one()


def test_another_token_on_the_payments_own_network_is_recorded_and_never_counted(
    sessions, live_merchant, create_payment, client
):
    p = create_payment(live_merchant, {**LIVE_PAYMENT, "token": "USDC"}, mode="live")
    settle(sessions, report({**p, "token": "USDT"}, TransferStatus.CONFIRMED, DUE, 2))
    t = record_of(sessions, p)
    assert (t.network, t.token, t.counted) == (p["network"], "USDT", False)
    got = client.get(f"{API}/payments/{p['id']}", headers=live_merchant.headers("live")).get_json()["data"]
    assert got["status"] == "PENDING"


def with_settlement_address(sessions, p) -> None:
    """The payment as a forwarder deposit: the settlement address its funds are swept to."""
    with unit_of_work(sessions) as s:
        s.get(Payment, uuid.UUID(p["id"])).settlement_address = SETTLEMENT


def test_only_a_live_forwarder_deposit_is_owed_a_sweep(sessions, live_merchant, create_payment):
    wallet = create_payment(live_merchant, LIVE_PAYMENT, mode="live")  # an xpub address: the merchant's own
    deposit = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    with_settlement_address(sessions, deposit)
    rehearsal = create_payment(live_merchant, LIVE_PAYMENT, mode="test")
    with_settlement_address(sessions, rehearsal)
    for p in (wallet, deposit, rehearsal):
        settle(sessions, report(p, TransferStatus.SEEN, DUE, 1))
    assert [record_of(sessions, p).sweep_due for p in (wallet, deposit, rehearsal)] == [False, True, False]


def test_a_confirmed_transfer_confirmed_again_in_another_block_follows_it_and_a_repeat_changes_nothing(
    sessions, live_merchant, create_payment
):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    first = report(p, TransferStatus.CONFIRMED, DUE, 3, block_hash="0xb1")
    settle(sessions, first)
    before = record_of(sessions, p)
    settle(sessions, first)  # the same report again: nothing to write
    assert record_of(sessions, p).updated_at == before.updated_at
    moved = report(p, TransferStatus.CONFIRMED, DUE, 3, tx=first.tx_hash, block_hash="0xb2")
    settle(sessions, moved)  # a deep reorg put the transaction in another block, confirmed there too
    t = record_of(sessions, p)
    assert (t.status, t.block_hash, t.amount_units) == ("CONFIRMED", "0xb2", DUE)
