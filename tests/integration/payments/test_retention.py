"""Retention (kassa_common.retention, run by the expirer): rows past their window go, in
batches, and nothing inside its window, nor an event still waiting to be published."""

from __future__ import annotations

import uuid
from datetime import timedelta

import sqlalchemy as sa

from kassa_common import retention
from kassa_common.db import unit_of_work
from kassa_common.models import (
    DeliveryAttempt,
    Event,
    IdempotencyKey,
    ProcessedMessage,
    WebhookDelivery,
    WebhookEndpoint,
)
from kassa_common.timefmt import utcnow

TTL = timedelta(hours=24)


def test_rows_past_their_window_are_purged_in_batches_and_the_rest_kept(sessions, make_merchant):
    m = make_merchant()
    now = utcnow()
    old, fresh = now - timedelta(days=31), now - timedelta(days=29)
    tag = uuid.uuid4().hex[:10]
    ids = {name: f"evt_{tag}_{name}" for name in ("old", "old_unpublished", "fresh")}
    with unit_of_work(sessions) as s:
        hook = WebhookEndpoint(
            id=uuid.uuid4(),
            merchant_id=m.id,
            test_mode=True,
            url="https://h.example.com/k",
            events=["payment.created"],
            secret="whsec_x",
            created_at=now,
            updated_at=now,
        )
        s.add(hook)
        for name, at, published in (("old", old, old), ("old_unpublished", old, None), ("fresh", fresh, fresh)):
            s.add(
                Event(
                    id=ids[name],
                    type="payment.created",
                    merchant_id=m.id,
                    test_mode=True,
                    payload={},
                    created_at=at,
                    published_at=published,
                )
            )
        s.flush()
        deliveries = {}
        for name, at in (("old", old), ("fresh", fresh)):
            d = WebhookDelivery(
                id=uuid.uuid4(),
                endpoint_id=hook.id,
                event_id=ids[name],
                event_type="payment.created",
                status="SUCCEEDED",
                attempts=1,
                created_at=at,
                updated_at=at,
            )
            s.add(d)
            s.flush()
            s.add(
                DeliveryAttempt(
                    id=uuid.uuid4(), delivery_id=d.id, attempt=1, status_code=200, duration_ms=5, created_at=at
                )
            )
            deliveries[name] = d.id
        for i in range(5):  # more than a batch
            s.add(ProcessedMessage(consumer=f"test-{tag}", message_id=f"old-{i}", created_at=now - timedelta(hours=73)))
        s.add(ProcessedMessage(consumer=f"test-{tag}", message_id="fresh", created_at=now - timedelta(hours=71)))
        s.add(
            IdempotencyKey(
                merchant_id=m.id,
                test_mode=True,
                key=f"{tag}-old",
                request_hash="x" * 64,
                created_at=now - TTL - timedelta(minutes=1),
            )
        )
        s.add(
            IdempotencyKey(
                merchant_id=m.id,
                test_mode=True,
                key=f"{tag}-fresh",
                request_hash="x" * 64,
                created_at=now - TTL + timedelta(minutes=5),
            )
        )

    deleted = retention.purge(sessions, TTL, batch=2)

    with sessions() as s:
        events = set(s.scalars(sa.select(Event.id).where(Event.id.in_(ids.values()))))
        assert events == {ids["old_unpublished"], ids["fresh"]}  # an unpublished event waits for the relay
        assert set(s.scalars(sa.select(WebhookDelivery.id).where(WebhookDelivery.id.in_(deliveries.values())))) == {
            deliveries["fresh"]
        }  # the old event took its delivery with it
        assert (
            s.scalar(
                sa.select(sa.func.count())
                .select_from(DeliveryAttempt)
                .where(DeliveryAttempt.delivery_id.in_(deliveries.values()))
            )
            == 1
        )
        assert set(
            s.scalars(sa.select(ProcessedMessage.message_id).where(ProcessedMessage.consumer == f"test-{tag}"))
        ) == {"fresh"}
        assert set(s.scalars(sa.select(IdempotencyKey.key).where(IdempotencyKey.merchant_id == m.id))) == {
            f"{tag}-fresh"
        }
    assert deleted["events"] >= 1 and deleted["processed_messages"] >= 5 and deleted["idempotency_keys"] >= 1


def test_a_purge_skips_rows_another_transaction_holds_instead_of_waiting(sessions, make_merchant):
    m = make_merchant()
    key = f"held-{uuid.uuid4().hex[:8]}"
    with unit_of_work(sessions) as s:
        s.add(
            IdempotencyKey(
                merchant_id=m.id,
                test_mode=True,
                key=key,
                request_hash="x" * 64,
                created_at=utcnow() - TTL - timedelta(hours=1),
            )
        )
    with sessions() as holder:
        holder.execute(sa.select(IdempotencyKey).where(IdempotencyKey.key == key).with_for_update())
        retention.purge(sessions, TTL)  # returns at once: the held row is skipped
        holder.rollback()
    with sessions() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(IdempotencyKey).where(IdempotencyKey.key == key)) == 1
    retention.purge(sessions, TTL)
    with sessions() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(IdempotencyKey).where(IdempotencyKey.key == key)) == 0
