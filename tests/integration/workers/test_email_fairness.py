"""The email channel is fair across recipient domains: a flood of emails due to one domain
does not hold up the one email due to another (the claim takes each domain's oldest in turn)."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Notification
from kassa_common.statuses import NotificationStatus
from kassa_common.timefmt import utcnow
from kassa_webhook_sender.email.channel import Email
from kassa_webhook_sender.email.smtp import SmtpServer
from kassa_webhook_sender.engine.dispatcher import Dispatcher
from tests.support.webhooks import add_event

FLOOD = 30


def notification(sessions, merchant_id, recipient: str, age_seconds: float) -> uuid.UUID:
    event = add_event(sessions, merchant_id, "payment.completed")
    nid = uuid.uuid4()
    with unit_of_work(sessions) as s:
        s.add(
            Notification(
                id=nid,
                event_id=event.id,
                kind="receipt",
                recipient=recipient,
                subject="Receipt",
                body_text="Thanks",
                status=NotificationStatus.PENDING,
                next_attempt_at=utcnow() - sa.func.make_interval(0, 0, 0, 0, 0, 0, age_seconds),
            )
        )
    return nid


def test_a_flood_to_one_domain_does_not_hold_up_another_domains_email(sessions, make_merchant):
    merchant = make_merchant()
    flood = [notification(sessions, merchant.id, f"c{i}@flood.example", 1000 - i) for i in range(FLOOD)]
    quiet = notification(sessions, merchant.id, "someone@quiet.example", 1)  # due last of all
    ours, claimed = set(flood) | {quiet}, []
    dispatcher = Dispatcher(sessions, Email(SmtpServer.from_url("smtp://127.0.0.1"), "k@shop.example"))
    try:
        for _ in range(FLOOD + 50):
            [job] = dispatcher.claim(1) or [None]
            if job is None:
                break
            if job.id in ours:
                claimed.append(job.id)
            if job.id == quiet:
                break
        assert quiet in claimed, "the other domain's email was never claimed"
        assert claimed.index(quiet) <= 1, claimed.index(quiet)  # after at most one of the flood
    finally:
        with unit_of_work(sessions) as s:
            s.execute(sa.update(Notification).where(Notification.id.in_(ours)).values(status="FAILED"))
