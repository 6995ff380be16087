"""kassa-client against the running stack (gunicorn, relay, settler, expirer, webhook
sender; real PostgreSQL and RabbitMQ): payments, pages walked to the end, events, and
every error answer as its exception."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from kassa_client import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Event,
    ForbiddenError,
    Kassa,
    NotFoundError,
    Payment,
    UnprocessableError,
    ValidationError,
)
from tests.conftest import make_key
from tests.support.wait import until

TIMEOUT = 30


@pytest.fixture
def kassa(stack, merchant):
    with Kassa(merchant.test_key, base_url=stack.api) as client:
        yield client


def unique_email() -> str:
    return f"c-{secrets.token_hex(5)}@example.com"


def test_create_gives_a_typed_payment_with_exact_amounts(kassa):
    email = unique_email()
    p = kassa.payments.create(
        amount=Decimal("25.10"),
        token="usdc",
        network="base",
        customer_email=email,
        redirect_url="https://shop.example.com/thanks",
        metadata={"order_id": "1001"},
    )
    assert isinstance(p, Payment) and p.status == "PENDING" and p.test_mode is True
    assert p.amount == Decimal("25.1") and p.crypto_amount == Decimal("25.1") and p.amount_received == 0
    assert (p.token, p.network, p.customer_email, p.metadata) == ("USDC", "BASE", email, {"order_id": "1001"})
    assert p.checkout_url.endswith(f"/pay/{p.short_id}")
    now = datetime.now(UTC)
    assert p.created_at.tzinfo is not None and abs(p.created_at - now) < timedelta(minutes=5)
    assert p.expires_at > p.created_at
    assert kassa.payments.get(p.short_id) == kassa.payments.get(p.id)
    assert kassa.payments.get(p.id).id == p.id


def test_the_same_idempotency_key_returns_the_first_payment(kassa):
    key = f"order-{uuid.uuid4()}"
    first = kassa.payments.create(amount="10.00", token="USDC", network="BASE", idempotency_key=key)
    again = kassa.payments.create(amount="10.00", token="USDC", network="BASE", idempotency_key=key)
    assert again.id == first.id and again.short_id == first.short_id
    with pytest.raises(ConflictError) as caught:
        kassa.payments.create(amount="11.00", token="USDC", network="BASE", idempotency_key=key)
    assert caught.value.status == 409 and caught.value.code == "CONFLICT" and "different" in caught.value.message


def test_creates_without_a_key_of_their_own_are_distinct_payments(kassa):
    a = kassa.payments.create(amount=5, token="USDC", network="BASE")
    b = kassa.payments.create(amount=5, token="USDC", network="BASE")
    assert a.id != b.id


def test_iterate_walks_every_page_newest_first(kassa):
    email = unique_email()
    made = [kassa.payments.create(amount=1 + i, token="USDC", network="BASE", customer_email=email) for i in range(7)]
    first = kassa.payments.list(search=email, page_size=3)
    assert (first.total, first.pages, len(first), first.has_more) == (7, 3, 3, True)
    assert first.next_page().page == 2
    walked = list(kassa.payments.iterate(search=email, page_size=3))
    assert [p.id for p in walked] == [p.id for p in reversed(made)]
    assert kassa.payments.list(search=email, page=3, page_size=3).next_page() is None


def test_list_filters_by_status(kassa):
    email = unique_email()
    p = kassa.payments.create(amount=3, token="USDC", network="BASE", customer_email=email)
    kassa.payments.cancel(p.id)
    kassa.payments.create(amount=3, token="USDC", network="BASE", customer_email=email)
    canceled = kassa.payments.list(search=email, status="CANCELED")
    assert [x.id for x in canceled] == [p.id] and canceled.total == 1


def test_cancel_then_cancel_again_is_a_conflict(kassa):
    p = kassa.payments.create(amount=2, token="USDC", network="BASE")
    assert kassa.payments.cancel(p.short_id).status == "CANCELED"
    with pytest.raises(ConflictError) as caught:
        kassa.payments.cancel(p.id)
    err = caught.value
    assert err.status == 409 and err.code == "CONFLICT" and err.request_id and len(err.request_id) >= 16
    assert err.body["error"]["message"] == err.message


def test_an_unknown_key_is_an_authentication_error(stack):
    with (
        Kassa("kassa_test_" + secrets.token_urlsafe(32), base_url=stack.api) as stranger,
        pytest.raises(AuthenticationError) as caught,
    ):
        stranger.payments.list()
    assert caught.value.status == 401 and caught.value.code == "UNAUTHORIZED"
    assert caught.value.headers["www-authenticate"].startswith("ApiKey")


def test_a_key_without_the_scope_is_forbidden(stack, merchant, sessions):
    reader = make_key(sessions, merchant.id, "test", ["payments:read"])
    with Kassa(reader, base_url=stack.api) as kassa:
        assert kassa.payments.list().total >= 0
        with pytest.raises(ForbiddenError) as caught:
            kassa.payments.create(amount=1, token="USDC", network="BASE")
    assert caught.value.status == 403 and "payments:create" in caught.value.message


def test_another_merchants_payment_is_not_found(stack, kassa, make_merchant):
    theirs = kassa.payments.create(amount=1, token="USDC", network="BASE")
    with Kassa(make_merchant().test_key, base_url=stack.api) as other, pytest.raises(NotFoundError) as caught:
        other.payments.get(theirs.id)
    assert caught.value.status == 404 and caught.value.code == "NOT_FOUND"
    for ref in ("../products", "..", "."):  # one path segment each: never another route
        with pytest.raises(NotFoundError):
            kassa.payments.get(ref)


def test_invalid_fields_are_a_validation_error_naming_each(kassa):
    with pytest.raises(ValidationError) as caught:
        kassa.payments.create(amount="0.001", token="USDC", network="BASE", customer_email="not-an-email")
    err = caught.value
    assert err.status == 400 and err.code == "VALIDATION_ERROR"
    assert {d["field"] for d in err.details} == {"amount", "customer_email"}
    assert "amount" in str(err)


def test_a_bad_query_is_a_bad_request_but_not_a_validation_error(kassa):
    with pytest.raises(BadRequestError) as caught:
        kassa.payments.list(page_size=101)
    assert type(caught.value) is BadRequestError and caught.value.code == "BAD_REQUEST"
    assert caught.value.details[0]["field"] == "pageSize"


def test_an_unsupported_pair_is_unprocessable(kassa):
    with pytest.raises(UnprocessableError) as caught:
        kassa.payments.create(amount=1, token="BTC", network="BASE")
    assert caught.value.status == 422


def test_networks_need_no_key(stack):
    with Kassa(None, base_url=stack.api) as anonymous:
        networks = anonymous.networks.list()
    base = next(n for n in networks if n.name == "BASE")
    assert base.kind == "evm" and base.token("USDC").decimals == 6
    with Kassa(None, base_url=stack.api) as anonymous:
        assert anonymous.networks.get("base") == base and anonymous.networks.get("NOWHERE") is None


def test_events_of_a_payment_are_typed_and_match_their_get(kassa):
    p = kassa.payments.create(amount=4, token="USDC", network="BASE", metadata={"k": "v"})
    events = until(
        lambda: [e for e in kassa.events.iterate(payment_id=p.id) if e.type == "payment.completed"],
        TIMEOUT,
        message="payment.completed in the events log",
    )
    completed = events[0]
    assert isinstance(completed, Event) and completed.payment.status == "COMPLETED"
    assert completed.payment.payment_id == p.id and completed.payment.metadata == {"k": "v"}
    assert completed.payment.amount_received == completed.payment.crypto_amount == Decimal(4)
    assert kassa.events.get(completed.id) == completed
    created = kassa.events.list(payment_id=p.id, type="payment.created")
    assert [e.type for e in created] == ["payment.created"]
    later = kassa.events.list(payment_id=p.id, created_gte=datetime.now(UTC) + timedelta(hours=1))
    assert later.total == 0 and list(later) == []


def test_the_raw_request_reaches_endpoints_by_path(kassa):
    p = kassa.payments.create(amount=6, token="USDC", network="BASE")
    assert kassa.request("GET", f"/payments/{p.short_id}")["id"] == p.id
