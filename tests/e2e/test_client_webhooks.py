"""kassa-client against the running stack: webhook endpoints and their deliveries, a real
delivery verified and parsed at a real receiver, and products."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kassa_client import (
    Delivery,
    Kassa,
    NotFoundError,
    Payment,
    SignatureVerificationError,
    UnprocessableError,
    ValidationError,
    construct_event,
    verify_signature,
)
from tests.support.wait import until

TIMEOUT = 30


@pytest.fixture
def kassa(stack, merchant):
    with Kassa(merchant.test_key, base_url=stack.api) as client:
        yield client


def test_a_real_delivery_verifies_and_parses_into_a_typed_event(kassa, receiver):
    hook = kassa.webhooks.create(url=receiver.url, events=["payment.completed"], description="shop")
    assert hook.secret.startswith("whsec_") and hook.events == ["payment.completed"]
    p = kassa.payments.create(amount="12.34", token="USDC", network="BASE", metadata={"order_id": "A-7"})
    hit = until(lambda: receiver.events("payment.completed", p.id), TIMEOUT, message="payment.completed")[0]
    header = hit.headers["X-Kassa-Signature"]
    assert verify_signature(hook.secret, header, hit.body)
    event = construct_event(hit.body, header, hook.secret)
    assert event.type == "payment.completed" and event.id == hit.headers["X-Kassa-Event-Id"]
    assert isinstance(event.data, Payment) and event.data.id == p.id and event.data.status == "COMPLETED"
    assert event.data.amount == Decimal("12.34") and event.data.amount_received == Decimal("12.34")
    assert event.data.transaction_hash.startswith("test_tx_") and event.data.metadata == {"order_id": "A-7"}
    assert kassa.events.get(event.id) == event  # the log holds what the webhook carried
    with pytest.raises(SignatureVerificationError):
        construct_event(hit.body.replace(b"A-7", b"A-8"), header, hook.secret)
    with pytest.raises(SignatureVerificationError):
        construct_event(hit.body, header, "whsec_not_the_secret")


def test_after_a_rotation_deliveries_verify_with_the_new_secret(kassa, receiver):
    hook = kassa.webhooks.create(url=receiver.url)
    rotated = kassa.webhooks.rotate_secret(hook.id)
    assert rotated.id == hook.id and rotated.secret.startswith("whsec_") and rotated.secret != hook.secret
    delivery = kassa.webhooks.test(hook.id)
    assert isinstance(delivery, Delivery) and delivery.event == "webhook.test" and delivery.webhook_id == hook.id
    hit = until(lambda: receiver.for_delivery(delivery.id), TIMEOUT, message="the test delivery")[0]
    event = construct_event(hit.body, hit.headers["X-Kassa-Signature"], rotated.secret)
    assert event.type == "webhook.test" and event.id == delivery.event_id
    assert event.data["webhook_id"] == hook.id and event.payment is None


def test_webhook_endpoints_round_trip(kassa, receiver):
    hook = kassa.webhooks.create(url=receiver.url, events=["payment.created", "payment.canceled"])
    got = kassa.webhooks.get(hook.id)
    assert got.secret is None and got.url == receiver.url and got == kassa.webhooks.get(hook.id)
    paused = kassa.webhooks.update(hook.id, active=False, description="paused")
    assert (paused.active, paused.description, paused.events) == (False, "paused", hook.events)
    with pytest.raises(UnprocessableError):
        kassa.webhooks.test(hook.id)  # a disabled endpoint gets nothing
    assert kassa.webhooks.update(hook.id, description=None).description is None
    assert hook.id in [h.id for h in kassa.webhooks.iterate(page_size=1)]
    with pytest.raises(ValidationError) as caught:
        kassa.webhooks.update(hook.id, events=["payment.everything"])
    assert caught.value.details[0]["field"].startswith("events")
    assert kassa.webhooks.delete(hook.id) is True
    with pytest.raises(NotFoundError):
        kassa.webhooks.get(hook.id)


def test_deliveries_are_listed_walked_and_redelivered(kassa, receiver):
    hook = kassa.webhooks.create(url=receiver.url, events=["payment.created"])
    made = [kassa.payments.create(amount=1, token="USDC", network="BASE") for _ in range(3)]

    def delivered():
        page = kassa.webhooks.deliveries.list(hook.id, status="SUCCEEDED", page_size=2)
        return page if page.total == 3 else None

    first = until(delivered, TIMEOUT, message="three deliveries")
    assert first.pages == 2 and all(d.attempts_log and d.attempts_log[0].status_code == 200 for d in first)
    walked = list(kassa.webhooks.deliveries.iterate(hook.id, page_size=2))
    assert len(walked) == 3 and {d.event for d in walked} == {"payment.created"}
    again = kassa.webhooks.deliveries.redeliver(hook.id, walked[0].id)
    assert again.id == walked[0].id and again.status == "PENDING"
    until(lambda: len(receiver.for_delivery(again.id)) == 2, TIMEOUT, message="the redelivery")
    assert {h.json["data"]["payment_id"] for h in receiver.events("payment.created")} >= {p.id for p in made}
    with pytest.raises(NotFoundError):
        kassa.webhooks.deliveries.redeliver(hook.id, "00000000-0000-0000-0000-000000000000")


def test_products_round_trip(kassa):
    tea = kassa.products.create(name="Tea", price=Decimal("4.50"), description="green")
    assert (tea.price, tea.currency_type, tea.active, tea.description) == (Decimal("4.5"), "FIAT", True, "green")
    assert tea.share_link.endswith(f"/products/{tea.id}")
    coin = kassa.products.create(name="Sats", price="0.012345678", currency_type="CRYPTO", token="ETH", network="BASE")
    assert coin.price == Decimal("0.012345678") and (coin.token, coin.network) == ("ETH", "BASE")
    changed = kassa.products.update(tea.id, price="5", active=False, description=None)
    assert (changed.price, changed.active, changed.description, changed.name) == (Decimal(5), False, None, "Tea")
    assert kassa.products.get(tea.id) == changed
    with pytest.raises(UnprocessableError):
        kassa.payments.create(product_id=tea.id, token="USDC", network="BASE")  # inactive
    listed = kassa.products.list(page_size=1)
    assert listed.page_size == 1 and listed.total >= 2
    assert {tea.id, coin.id} <= {p.id for p in kassa.products.iterate(page_size=1)}
    assert kassa.products.delete(coin.id) is True
    with pytest.raises(NotFoundError):
        kassa.products.get(coin.id)


def test_a_payment_for_a_product(kassa):
    tea = kassa.products.create(name="Tea", price="7.25")
    p = kassa.payments.create(product_id=tea.id, token="USDC", network="BASE")
    assert p.product_id == tea.id and p.amount == Decimal("7.25")
