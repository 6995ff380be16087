"""What the chain watcher's reports of a transfer to a claimed refund's address do to the
refund, on the real database, without a chain (``refunds.payouts`` through the settler's
``payments.settle``): reports may arrive twice, late or out of order, and the rules of
DESIGN §8 hold whatever the order."""

from __future__ import annotations

import secrets
import sys
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Event, Payment, Refund
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from tests.support.api import LIVE_PAYMENT
from tests.support.transfers import settle, settler_batches  # noqa: F401 (autouse)
from tests.support.transfers import tx_hash as tx

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
REQUIRED = 2  # LOCAL_EVM's


@pytest.fixture
def payment(live_merchant, create_payment):
    return create_payment(live_merchant, LIVE_PAYMENT, mode="live")


@pytest.fixture(autouse=True)
def customer(monkeypatch):
    """The customer's wallet: an address of this test's own (other tests' refunds wait at theirs)."""
    address = "0x" + secrets.token_hex(20)
    monkeypatch.setattr(sys.modules[__name__], "ADDRESS", address)
    return address


ADDRESS = ""  # this test's customer (``customer``)


@pytest.fixture
def claimed(sessions, payment):
    """Claimed refunds of the payment (rows as the refund package leaves them at the claim)."""

    def make(
        units: int = 1_000_000,
        *,
        address: str = ADDRESS,
        claim_block: int | None = 90,
        ago: int = 0,
        tag: int | None = None,
        test_mode: bool = False,
    ) -> uuid.UUID:
        now = utcnow()
        with unit_of_work(sessions) as s:
            p = s.get(Payment, uuid.UUID(payment["id"]))
            refund = Refund(
                id=uuid.uuid4(),
                merchant_id=p.merchant_id,
                payment_id=p.id,
                test_mode=test_mode,
                status="AWAITING_PAYMENT",
                payout_tag=tag,
                amount_units=units,
                token=p.token,
                network=p.network,
                decimals=p.decimals,
                claim_token=secrets.token_urlsafe(32),
                address=address or ADDRESS,
                claimed_at=now - timedelta(seconds=ago),
                claim_block=claim_block,
                created_at=now,
                updated_at=now,
                expires_at=now + timedelta(days=30),
            )
            s.add(refund)
        return refund.id

    return make


def payout(
    status: TransferStatus,
    units: int,
    confirmations: int,
    *,
    tx_: str,
    block: int | None = 100,
    block_hash: str | None = "0xb1",
    to: str | None = None,
    token: str = "USDC",
    log_index: int = 0,
    sender: str | None = None,
) -> TransferReport:
    return TransferReport(
        status,
        "LOCAL_EVM",
        tx_,
        log_index,
        token,
        (to or ADDRESS).lower(),
        units,
        block,
        block_hash,
        confirmations,
        sender=sender,
    )


def refund(sessions, rid) -> Refund:
    with sessions() as s:
        return s.get(Refund, rid)


def events(sessions, rid) -> list[str]:
    with sessions() as s:
        rows = s.execute(
            sa.select(Event.type, Event.payload).where(Event.type.like("refund.%")).order_by(Event.created_at)
        ).all()
    return [t for t, payload in rows if payload["data"]["id"] == str(rid)]


def test_a_seen_payout_is_held_then_completes_the_refund_once_confirmed(sessions, claimed):
    rid, paying = claimed(), tx()
    settle(sessions, payout(SEEN, 1_000_000, 1, tx_=paying))
    held = refund(sessions, rid)
    assert (held.status, held.transfer_ref, held.confirmations) == ("AWAITING_PAYMENT", f"{paying}:0:{ADDRESS}", 1)
    assert held.transaction_hash is None
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=paying))
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=paying))  # redelivered
    settle(sessions, payout(SEEN, 1_000_000, 1, tx_=paying))  # an older report, late
    done = refund(sessions, rid)
    assert (done.status, done.transaction_hash, done.payout_block_hash) == ("COMPLETED", paying, "0xb1")
    assert done.completed_at is not None and int(done.payout_units) == 1_000_000
    assert events(sessions, rid) == ["refund.completed"]


def test_an_orphaned_payout_is_forgotten_and_a_later_one_completes(sessions, claimed):
    rid, gone, later = claimed(), tx(), tx()
    settle(sessions, payout(SEEN, 1_000_000, 1, tx_=gone))
    settle(sessions, payout(ORPHANED, 1_000_000, 0, tx_=gone, block_hash="0xother"))  # not the block it holds
    assert refund(sessions, rid).transfer_ref is not None
    settle(sessions, payout(ORPHANED, 1_000_000, 0, tx_=gone))
    assert (refund(sessions, rid).transfer_ref, refund(sessions, rid).confirmations) == (None, 0)
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=later, block=101, block_hash="0xb2"))
    assert refund(sessions, rid).transaction_hash == later


def test_too_small_early_or_another_token_never_pays(sessions, claimed):
    rid = claimed(claim_block=100)
    settle(
        sessions,
        payout(CONFIRMED, 999_999, REQUIRED, tx_=tx(), block=101),  # too small
        payout(CONFIRMED, 1_000_000, REQUIRED, tx_=tx(), block=100),  # in the claim's block
        payout(CONFIRMED, 1_000_000, REQUIRED, tx_=tx(), block=101, token="USDT"),  # another token
        payout(CONFIRMED, 0, REQUIRED, tx_=tx(), block=101),  # nothing
    )
    assert refund(sessions, rid).status == "AWAITING_PAYMENT" and refund(sessions, rid).transfer_ref is None
    assert events(sessions, rid) == []


def test_one_transfer_pays_the_oldest_claim_it_covers_and_only_it(sessions, claimed):
    big = claimed(5_000_000, ago=30)  # the oldest claim, more than the transfer
    older = claimed(ago=20)
    newer = claimed(ago=10)
    one, two = tx(), tx()
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=one))
    assert [refund(sessions, r).status for r in (big, older, newer)] == [
        "AWAITING_PAYMENT",
        "COMPLETED",
        "AWAITING_PAYMENT",
    ]
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=one))  # the same transfer again: nothing more
    assert refund(sessions, newer).status == "AWAITING_PAYMENT"
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=two, block=101, block_hash="0xb2"))
    assert refund(sessions, newer).transaction_hash == two


def test_one_transaction_paying_two_addresses_pays_both_refunds(sessions, claimed):
    other = "0x" + "be" * 20
    a, b = claimed(), claimed(address=other)
    batch = tx()
    settle(
        sessions,
        payout(CONFIRMED, 1_000_000, REQUIRED, tx_=batch, log_index=3),
        payout(CONFIRMED, 1_000_000, REQUIRED, tx_=batch, log_index=4, to=other),
    )
    assert refund(sessions, a).status == refund(sessions, b).status == "COMPLETED"


def test_a_canceled_refund_whose_payout_was_seen_is_not_completed(sessions, claimed):
    rid, paying = claimed(), tx()
    settle(sessions, payout(SEEN, 1_000_000, 1, tx_=paying))
    with unit_of_work(sessions) as s:  # as the refund package's cancel leaves it
        s.execute(sa.update(Refund).where(Refund.id == rid).values(status="CANCELED", canceled_at=utcnow()))
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=paying))
    assert refund(sessions, rid).status == "CANCELED" and refund(sessions, rid).transaction_hash is None
    assert "refund.completed" not in events(sessions, rid)


def test_a_completed_refund_whose_payout_is_lost_in_a_deep_reorg_awaits_payment_again(sessions, claimed):
    rid, paying = claimed(), tx()
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=paying))
    settle(sessions, payout(REORGED, 1_000_000, REQUIRED, tx_=paying, block_hash="0xelsewhere"))  # not its block
    assert refund(sessions, rid).status == "COMPLETED"
    settle(sessions, payout(REORGED, 1_000_000, REQUIRED, tx_=paying))
    settle(sessions, payout(REORGED, 1_000_000, REQUIRED, tx_=paying))  # redelivered
    back = refund(sessions, rid)
    assert (back.status, back.transaction_hash, back.completed_at, back.transfer_ref) == (
        "AWAITING_PAYMENT",
        None,
        None,
        None,
    )
    assert events(sessions, rid) == ["refund.completed", "refund.reorged"]
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=paying, block=105, block_hash="0xb5"))  # mined again
    assert refund(sessions, rid).status == "COMPLETED"
    assert events(sessions, rid) == ["refund.completed", "refund.reorged", "refund.completed"]


def test_a_transfer_to_a_payment_address_is_never_a_payout(sessions, claimed, payment):
    rid = claimed(address=payment["address"])  # cannot be claimed so; were it, the deposit is the payment's
    settle(sessions, payout(CONFIRMED, 12_340_000, REQUIRED, tx_=tx(), to=payment["address"]))
    assert refund(sessions, rid).status == "AWAITING_PAYMENT"


def test_a_confirmed_payout_takes_a_claim_whose_payout_is_only_seen(sessions, claimed):
    rid, slow, fast = claimed(), tx(), tx()
    settle(sessions, payout(SEEN, 1_000_000, 1, tx_=slow, block=101, block_hash="0xb2"))
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=fast))
    assert refund(sessions, rid).transaction_hash == fast
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=slow, block=101, block_hash="0xb2"))  # pays nothing
    assert refund(sessions, rid).transaction_hash == fast and events(sessions, rid) == ["refund.completed"]


def test_a_payout_seen_unmined_then_mined_before_the_claim_is_let_go(sessions, claimed):
    rid, early, later = claimed(claim_block=100), tx(), tx()
    settle(sessions, payout(SEEN, 1_000_000, 0, tx_=early, block=None, block_hash=None))  # in the mempool
    assert refund(sessions, rid).transfer_ref is not None
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=early, block=99, block_hash="0xb0"))
    assert (refund(sessions, rid).status, refund(sessions, rid).transfer_ref) == ("AWAITING_PAYMENT", None)
    settle(sessions, payout(CONFIRMED, 1_000_000, REQUIRED, tx_=later, block=101, block_hash="0xb2"))
    assert refund(sessions, rid).transaction_hash == later


def test_only_exactly_payout_amount_from_another_address_pays_a_tagged_refund(sessions, claimed):
    rid = claimed(tag=417)
    settle(
        sessions,
        payout(CONFIRMED, 1_000_000, REQUIRED, tx_=tx()),  # the bare amount
        payout(CONFIRMED, 5_000_000, REQUIRED, tx_=tx()),  # an unrelated, bigger inflow
        payout(CONFIRMED, 1_000_418, REQUIRED, tx_=tx()),  # one base unit off
        payout(CONFIRMED, 1_000_417, REQUIRED, tx_=tx(), sender=ADDRESS),  # the customer's own, to itself
    )
    assert refund(sessions, rid).status == "AWAITING_PAYMENT" and refund(sessions, rid).transfer_ref is None
    paid, sender = tx(), "0x" + "5a" * 20
    settle(sessions, payout(CONFIRMED, 1_000_417, REQUIRED, tx_=paid, sender=sender))
    done = refund(sessions, rid)
    assert (done.status, done.transaction_hash, done.payout_from) == ("COMPLETED", paid, sender)


def test_a_test_refund_is_never_paid_by_a_chain_transfer(sessions, claimed):
    squatter = claimed(tag=5, test_mode=True, ago=60)  # the older claim, of test mode
    live = claimed(tag=6)
    settle(sessions, payout(CONFIRMED, 1_000_005, REQUIRED, tx_=tx()), payout(CONFIRMED, 1_000_006, REQUIRED, tx_=tx()))
    assert refund(sessions, squatter).status == "AWAITING_PAYMENT" and refund(sessions, squatter).transfer_ref is None
    assert refund(sessions, live).status == "COMPLETED"


def test_a_refund_reorged_back_whose_tag_a_newer_claim_took_gets_another(sessions, claimed):
    first = claimed(tag=7, ago=60)
    paid = tx()
    settle(sessions, payout(CONFIRMED, 1_000_007, REQUIRED, tx_=paid))
    assert refund(sessions, first).status == "COMPLETED"
    newer = claimed(tag=7)  # claimed after the tag's rest (the row says so): the same tag, open
    settle(sessions, payout(REORGED, 1_000_007, REQUIRED, tx_=paid))  # before: the unique index's error
    back, other = refund(sessions, first), refund(sessions, newer)
    assert back.status == other.status == "AWAITING_PAYMENT"
    assert other.payout_tag == 7 and back.payout_tag not in (None, 7)
