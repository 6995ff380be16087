"""The refund state machine (``refunds.transitions``, DESIGN §8) through its entry points,
on the real database (one per run, each test rolled back): what a merchant may refund and on
which network, the customer's claim, the merchant's cancel, the expiry of unclaimed refunds,
each with the status, the amounts and the event a user sees."""

from __future__ import annotations

import secrets
import threading
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.audit import OPERATOR
from kassa_common.db import unit_of_work
from kassa_common.errors import InvalidRefund, InvalidTransition, NotFound, UnsupportedPair
from kassa_common.models import Refund
from kassa_common.owner import Owner
from kassa_common.refunds.onchain import transfer_ref
from kassa_common.refunds.transitions import cancel_refund, claim_refund, create_refund, expire_refunds
from kassa_common.statuses import RefundStatus, TransferStatus
from kassa_common.timefmt import iso, utcnow
from tests.support.refund_rows import events, fresh, paid, transfer, watcher_at

AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED, CANCELED, EXPIRED = RefundStatus
T0 = utcnow().replace(microsecond=0)


def at(minutes: float):
    return T0 + timedelta(minutes=minutes)


def long_ago(minutes: float):
    """A time before any refund another test commits (each expiry counts every due refund of
    the database, and other tests commit refunds due within days of now)."""
    return datetime(1990, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)


# -- create ---------------------------------------------------------------------------------


def test_a_refund_of_everything_refundable_awaits_an_address_for_30_days_with_its_event(db):
    p = paid(db)  # 15 USDC confirmed
    refund = create_refund(db, p.owner, p.ref, None, "damaged", now=T0)
    assert (refund.status, refund.amount_units, refund.network, refund.token) == (
        AWAITING_ADDRESS,
        15_000_000,
        "BASE",
        "USDC",
    )
    assert refund.reason == "damaged" and refund.decimals == 6 and refund.confirmations == 0
    assert refund.expires_at == T0 + timedelta(days=30) and refund.created_at == refund.updated_at == T0
    assert len(refund.claim_token) == 43  # 32 random bytes, URL-safe
    assert refund.test_mode and refund.merchant_id == p.owner.merchant_id and refund.payment_id == p.payment.id
    [(kind, data)] = events(db, refund)
    assert kind == "refund.created"
    assert data["status"] == AWAITING_ADDRESS and data["amount"] == "15" and data["claimable"] is True
    assert "claim_url" not in data and data["expires_at"] == iso(T0 + timedelta(days=30))


def test_a_refund_takes_the_id_and_claim_period_it_is_given_and_the_payments_short_id_finds_it(db):
    p = paid(db)
    chosen = uuid.uuid4()
    refund = create_refund(
        db, p.owner, p.payment.short_id.lower(), Decimal("2.5"), claim_days=0.5, refund_id=chosen, now=T0
    )
    assert refund.id == chosen and refund.amount_units == 2_500_000
    assert refund.expires_at == T0 + timedelta(hours=12)
    assert db.get(Refund, chosen).status == AWAITING_ADDRESS


def test_refunds_take_turns_on_what_is_left_and_a_canceled_one_gives_its_amount_back(db):
    p = paid(db)
    first = create_refund(db, p.owner, p.ref, Decimal(10))
    with pytest.raises(InvalidRefund, match=r"more than is refundable \(5 USDC\)") as refused:
        create_refund(db, p.owner, p.ref, Decimal("5.000001"))
    assert refused.value.details == [{"field": "amount", "message": "at most 5"}]
    assert create_refund(db, p.owner, p.ref, Decimal(5)).amount_units == 5_000_000  # exactly what is left
    with pytest.raises(InvalidTransition, match="nothing of this payment is refundable: no confirmed funds"):
        create_refund(db, p.owner, p.ref, None)
    cancel_refund(db, p.owner, str(first.id), actor=OPERATOR)
    assert create_refund(db, p.owner, p.ref, None).amount_units == 10_000_000


def test_one_base_unit_left_is_refundable(db):
    p = paid(db, 1)
    assert create_refund(db, p.owner, p.ref, None).amount_units == 1


def test_a_payment_with_no_confirmed_funds_refunds_nothing(db):
    p = paid(db, None)
    transfer(db, p.payment, 5_000_000, status=TransferStatus.SEEN)
    for amount in (None, Decimal(1)):
        with pytest.raises(InvalidTransition, match="nothing of this payment is refundable:"):
            create_refund(db, p.owner, p.ref, amount)
    assert db.scalar(sa.select(sa.func.count()).select_from(Refund).where(Refund.payment_id == p.payment.id)) == 0


def test_an_amount_of_nothing_below_nothing_or_finer_than_the_token_is_refused_on_the_amount_field(db):
    p = paid(db)
    for amount in (Decimal(0), Decimal(-1), Decimal("0.0000001")):
        with pytest.raises(InvalidRefund) as refused:
            create_refund(db, p.owner, p.ref, amount)
        assert refused.value.details[0]["field"] == "amount"
    with pytest.raises(InvalidRefund, match="more decimal places than the token has \\(6\\)"):
        create_refund(db, p.owner, p.ref, Decimal("0.0000001"))
    with pytest.raises(InvalidRefund, match="must be more than 0"):
        create_refund(db, p.owner, p.ref, Decimal(0))
    assert create_refund(db, p.owner, p.ref, Decimal("0.000001")).amount_units == 1


def test_another_merchants_or_modes_payment_is_not_found(db):
    p = paid(db)
    for owner in (Owner(uuid.uuid4(), True, 60), Owner(p.owner.merchant_id, False, 60)):
        with pytest.raises(NotFound):
            create_refund(db, owner, p.ref, None)


# -- the network ------------------------------------------------------------------------------


def test_funds_only_on_another_network_are_refunded_there_in_its_decimals(db):
    p = paid(db, None)
    transfer(db, p.payment, 7 * 10**18, network="BSC")  # USDC on BSC has 18 decimals
    refund = create_refund(db, p.owner, p.ref, None)
    assert (refund.network, refund.decimals, refund.amount_units) == ("BSC", 18, 7 * 10**18)
    with pytest.raises(InvalidTransition, match="nothing of this payment is refundable: no"):
        create_refund(db, p.owner, p.ref, None, network="base")  # its own network, where nothing came


def test_the_payments_own_network_first_then_the_one_asked_for(db):
    p = paid(db)
    transfer(db, p.payment, 3_000_000, network="ETHEREUM")
    assert create_refund(db, p.owner, p.ref, Decimal(1)).network == "BASE"
    asked = create_refund(db, p.owner, p.ref, None, network="ethereum")
    assert (asked.network, asked.amount_units) == ("ETHEREUM", 3_000_000)
    with pytest.raises(InvalidTransition, match="refundable on ETHEREUM: no confirmed funds"):
        create_refund(db, p.owner, p.ref, None, network="ETHEREUM")


def test_with_funds_on_two_other_networks_the_payments_own_is_asked_for(db):
    p = paid(db, None)
    transfer(db, p.payment, 1_000_000, network="ETHEREUM")
    transfer(db, p.payment, 1_000_000, network="ARBITRUM")
    with pytest.raises(InvalidTransition, match="nothing of this payment is refundable: no"):
        create_refund(db, p.owner, p.ref, None)
    assert create_refund(db, p.owner, p.ref, None, network="ARBITRUM").amount_units == 1_000_000


def test_a_token_that_does_not_exist_on_the_network_asked_for_is_refused(db):
    p = paid(db, 10**18, token="ETH", decimals=18)
    with pytest.raises(UnsupportedPair, match="ETH does not exist on POLYGON"):
        create_refund(db, p.owner, p.ref, None, network="POLYGON")


# -- claim ------------------------------------------------------------------------------------


def test_a_claim_sets_the_address_and_its_time_and_writes_refund_claimed(db, good):
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal("2.5"), now=at(0))
    claimed = claim_refund(db, refund.claim_token, good.lower(), now=at(1))
    assert (claimed.status, claimed.address, claimed.claimed_at, claimed.updated_at) == (
        AWAITING_PAYMENT,
        good,
        at(1),
        at(1),
    )
    assert [k for k, _ in events(db, refund)] == ["refund.created", "refund.claimed"]
    data = events(db, refund)[1][1]
    assert data["status"] == AWAITING_PAYMENT and data["address"] == good and data["claimable"] is False
    tag = fresh(db, refund).payout_tag
    assert data["payout_amount"] == str(Decimal("2.5") + Decimal(tag) / 10**6)


def test_a_claim_link_works_once_and_never_after_its_expiry_or_a_cancel(db, good):
    p = paid(db)
    with pytest.raises(NotFound):
        claim_refund(db, "no-such-token", good)
    refund = create_refund(db, p.owner, p.ref, Decimal(1), now=at(0))
    claim_refund(db, refund.claim_token, good, now=at(1))
    with pytest.raises(InvalidTransition, match="AWAITING_PAYMENT refund cannot be claimed"):
        claim_refund(db, refund.claim_token, good, now=at(2))
    late = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=at(0))
    with pytest.raises(InvalidTransition, match="claim has expired"):
        claim_refund(db, late.claim_token, good, now=at(24 * 60))  # exactly at its expiry
    assert claim_refund(db, late.claim_token, good, now=at(24 * 60 - 1)).status == AWAITING_PAYMENT
    gone = create_refund(db, p.owner, p.ref, Decimal(1))
    cancel_refund(db, p.owner, str(gone.id), actor=OPERATOR)
    with pytest.raises(InvalidTransition, match="CANCELED refund cannot be claimed"):
        claim_refund(db, gone.claim_token, good)
    assert [k for k, _ in events(db, refund)] == ["refund.created", "refund.claimed"]


def test_a_claim_decides_on_the_row_as_the_database_holds_it(db, good):
    """Canceled by another transaction since this session read it: the claim is refused."""
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal(1))
    db.connection().execute(sa.text("UPDATE refunds SET status = 'CANCELED' WHERE id = :id"), {"id": refund.id})
    with pytest.raises(InvalidTransition, match="CANCELED"):
        claim_refund(db, refund.claim_token, good)


# -- cancel -----------------------------------------------------------------------------------


def test_a_merchant_cancels_before_the_payout_is_seen_with_refund_canceled(db, good):
    p = paid(db)
    unclaimed = create_refund(db, p.owner, p.ref, Decimal(1), now=at(0))
    done = cancel_refund(db, p.owner, str(unclaimed.id), now=at(3), actor=OPERATOR)
    assert (done.status, done.canceled_at, done.updated_at) == (CANCELED, at(3), at(3))
    assert [k for k, _ in events(db, unclaimed)] == ["refund.created", "refund.canceled"]
    assert events(db, unclaimed)[1][1]["status"] == CANCELED
    claimed = create_refund(db, p.owner, p.ref, Decimal(1))
    claim_refund(db, claimed.claim_token, good)
    assert cancel_refund(db, p.owner, str(claimed.id), actor=OPERATOR).status == CANCELED
    with pytest.raises(InvalidTransition, match="CANCELED refund cannot be canceled"):
        cancel_refund(db, p.owner, str(claimed.id), actor=OPERATOR)


def test_no_cancel_once_the_payout_is_seen_or_the_refund_completed(db, good):
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal(1))
    claim_refund(db, refund.claim_token, good)
    tx_hash = "0x" + secrets.token_hex(32)
    refund.transfer_ref, refund.confirmations = transfer_ref(tx_hash, 0, good), 1
    db.flush()
    with pytest.raises(InvalidTransition, match=rf"payout {tx_hash} is already seen on chain \(1 confirmation"):
        cancel_refund(db, p.owner, str(refund.id), actor=OPERATOR)
    refund.status = COMPLETED
    db.flush()
    with pytest.raises(InvalidTransition, match="COMPLETED refund cannot be canceled"):
        cancel_refund(db, p.owner, str(refund.id), actor=OPERATOR)
    assert fresh(db, refund).status == COMPLETED


def test_another_merchants_or_modes_refund_cannot_be_canceled(db):
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal(1))
    for owner in (Owner(uuid.uuid4(), True, 60), Owner(p.owner.merchant_id, False, 60)):
        with pytest.raises(NotFound):
            cancel_refund(db, owner, str(refund.id), actor=OPERATOR)
    assert fresh(db, refund).status == AWAITING_ADDRESS


# -- expiry -----------------------------------------------------------------------------------


def test_unclaimed_refunds_expire_at_their_time_oldest_first_with_refund_expired(db, good):
    p = paid(db)
    first = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago(0))
    second = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago(1))
    claimed = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago(0))
    claim_refund(db, claimed.claim_token, good, now=long_ago(5))
    due = long_ago(24 * 60)  # the first's expiry exactly, the second's a minute ahead
    assert expire_refunds(db, due - timedelta(microseconds=1)) == 0
    assert expire_refunds(db, due + timedelta(minutes=1), limit=1) == 1
    assert (fresh(db, first).status, fresh(db, second).status) == (EXPIRED, AWAITING_ADDRESS)
    assert [k for k, _ in events(db, first)] == ["refund.created", "refund.expired"]
    assert events(db, first)[1][1]["status"] == EXPIRED
    assert expire_refunds(db, due + timedelta(minutes=1)) == 1
    assert fresh(db, second).status == EXPIRED and fresh(db, claimed).status == AWAITING_PAYMENT


def test_a_refund_expires_exactly_at_its_expiry_at_the_time_given(db):
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago(0))
    assert expire_refunds(db, long_ago(24 * 60)) == 1
    expired = fresh(db, refund)
    assert expired.status == EXPIRED and expired.updated_at == long_ago(24 * 60)
    assert expire_refunds(db, long_ago(24 * 60)) == 0  # once


def test_a_refund_waits_for_another_of_the_same_payment_and_counts_it(sessions):
    """Two refunds of one payment at once take turns on the payment's row: the second sees the
    first's amount held (committed data: two transactions)."""
    with unit_of_work(sessions) as s:
        p = paid(s)  # 15 USDC
    first = sessions()
    try:
        create_refund(first, p.owner, p.ref, Decimal(10))  # holds the payment's row until it commits
        second, got = threading.Thread(target=lambda: got.update(outcome=refund_in_turn(sessions, p))), {}
        second.start()
        second.join(0.5)
        assert second.is_alive()  # waiting for the first
        first.commit()
    finally:
        first.close()
    second.join(10)
    assert isinstance(got["outcome"], InvalidRefund) and "more than is refundable (5 USDC)" in str(got["outcome"])


def refund_in_turn(sessions, p):
    try:
        with unit_of_work(sessions) as s:
            return create_refund(s, p.owner, p.ref, Decimal(10)).id
    except InvalidRefund as exc:
        return exc


def test_a_live_claim_records_where_the_network_stood(db, good):
    watcher_at(db, "BASE", 4321)  # no node: the watcher's height
    p = paid(db, test_mode=False)
    refund = create_refund(db, p.owner, p.ref, Decimal(1))
    assert claim_refund(db, refund.claim_token, good).claim_block == 4321


def test_the_expiry_writes_the_refund_as_the_database_holds_it(db):
    """Flagged by another transaction since this session read it (its funds reorged): the
    expiry's event shows the flag."""
    p = paid(db)
    refund = create_refund(db, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago(0))
    db.connection().execute(sa.text("UPDATE refunds SET funds_reorged = true WHERE id = :id"), {"id": refund.id})
    assert expire_refunds(db, long_ago(24 * 60)) == 1
    kind, data = events(db, refund)[-1]
    assert kind == "refund.expired" and data["funds_reorged"] is True


def test_the_expiry_passes_over_a_refund_another_transaction_holds(sessions):
    """Committed data, two transactions: a refund locked elsewhere (being claimed) is left for
    the next round, without waiting."""
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)  # due before any other test's refund
    with unit_of_work(sessions) as s:
        p = paid(s)
        refund_id = create_refund(s, p.owner, p.ref, Decimal(1), claim_days=1, now=long_ago).id
    due = long_ago + timedelta(days=1)
    holder = sessions()
    try:
        holder.execute(sa.text("SELECT id FROM refunds WHERE id = :id FOR UPDATE"), {"id": refund_id})
        expirer, got = threading.Thread(target=lambda: got.update(n=expire_in_turn(sessions, due))), {}
        expirer.start()
        expirer.join(10)
        assert not expirer.is_alive() and got["n"] == 0
    finally:
        holder.rollback()
        holder.close()
    assert expire_in_turn(sessions, due) == 1


def expire_in_turn(sessions, now):
    with unit_of_work(sessions) as s:
        return expire_refunds(s, now, limit=1)
