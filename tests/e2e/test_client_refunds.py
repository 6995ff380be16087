"""kassa-client's refunds against the running stack (gunicorn, relay, settler, expirer,
webhook sender; real PostgreSQL and RabbitMQ): a test payment paid by simulation, refunded
in part and in full, listed, read, canceled, the refused answers as exceptions, and a
refund event verified and parsed at a real receiver."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kassa_client import ConflictError, Kassa, NotFoundError, Refund, ValidationError, construct_event
from tests.support.wait import until

TIMEOUT = 30


@pytest.fixture
def kassa(stack, merchant):
    with Kassa(merchant.test_key, base_url=stack.api) as client:
        yield client


def completed_payment(kassa: Kassa, amount: str = "10"):
    """A test-mode payment the stack completes by itself (TEST_MODE_COMPLETE_SECONDS)."""
    p = kassa.payments.create(amount=amount, token="USDC", network="BASE")
    return until(
        lambda: (got := kassa.payments.get(p.id)).status == "COMPLETED" and got,
        TIMEOUT,
        message="the payment completed",
    )


def test_a_partial_then_a_full_refund_the_list_and_the_payments_amounts(kassa):
    p = completed_payment(kassa)
    assert p.refundable_amount == Decimal(10) and p.refunded_amount == Decimal(0)
    part = kassa.refunds.create(p.id, amount=Decimal("2.50"), reason="damaged")
    assert isinstance(part, Refund) and part.status == "AWAITING_ADDRESS"
    assert (part.amount, part.token, part.network, part.reason) == (Decimal("2.5"), "USDC", "BASE", "damaged")
    assert part.address is None and part.claim_url.rsplit("/", 2)[-2] == "refunds"
    assert part.expires_at > part.created_at
    rest = kassa.refunds.create(p.short_id)  # by default: everything refundable
    assert rest.amount == Decimal("7.5")
    assert [r.id for r in kassa.refunds.list(p.id)] == [rest.id, part.id]
    assert kassa.refunds.get(part.id) == part
    assert kassa.payments.get(p.id).refundable_amount == Decimal(0)
    with pytest.raises(ConflictError):
        kassa.refunds.create(p.id)  # nothing left


def test_the_refused_answers_are_exceptions(kassa, stack, make_merchant):
    p = completed_payment(kassa, "5")
    with pytest.raises(ValidationError) as too_much:
        kassa.refunds.create(p.id, amount="5.01")
    assert "more than is refundable" in str(too_much.value)
    with pytest.raises(ValidationError):
        kassa.refunds.create(p.id, amount="1.0000001")  # USDC has 6 decimals
    with pytest.raises(ValidationError):
        kassa.refunds.create(p.id, amount=0)
    refund = kassa.refunds.create(p.id, amount="1")
    canceled = kassa.refunds.cancel(refund.id)
    assert canceled.status == "CANCELED" and canceled.canceled_at is not None
    with pytest.raises(ConflictError):
        kassa.refunds.cancel(refund.id)
    with Kassa(make_merchant().test_key, base_url=stack.api) as other:
        with pytest.raises(NotFoundError):
            other.refunds.get(refund.id)
        with pytest.raises(NotFoundError):
            other.refunds.create(p.id)


def test_one_idempotency_key_makes_one_refund(kassa):
    p = completed_payment(kassa, "5")
    first = kassa.refunds.create(p.id, amount="1", idempotency_key="order-77-refund")
    again = kassa.refunds.create(p.id, amount="1", idempotency_key="order-77-refund")
    assert again.id == first.id and len(kassa.refunds.list(p.id)) == 1
    with pytest.raises(ConflictError):
        kassa.refunds.create(p.id, amount="2", idempotency_key="order-77-refund")


def test_a_refund_event_verifies_and_parses_into_a_refund(kassa, receiver):
    hook = kassa.webhooks.create(url=receiver.url, events=["refund.created", "refund.canceled"])
    p = completed_payment(kassa, "5")
    refund = kassa.refunds.create(p.id, amount="1.25")
    kassa.refunds.cancel(refund.id)
    hits = until(lambda: len(receiver.events()) >= 2 and receiver.events(), TIMEOUT, message="two refund webhooks")
    assert sorted(h.headers["X-Kassa-Event"] for h in hits) == ["refund.canceled", "refund.created"]
    for hit in hits:
        event = construct_event(hit.body, hit.headers["X-Kassa-Signature"], hook.secret)
        assert event.refund is not None and event.payment is None
        assert event.refund.id == refund.id and event.refund.payment_id == p.id
        assert event.refund.amount == Decimal("1.25")
        assert kassa.events.get(event.id) == event
