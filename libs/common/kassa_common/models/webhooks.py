"""Outbound messages: webhook endpoints, their deliveries and every attempt, and the
emails (notifications) the notifier sends."""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import NOW, Base, created, uuid_pk


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    id: Mapped[uuid.UUID] = uuid_pk()
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    url: Mapped[str] = mapped_column(sa.Text, nullable=False)
    events: Mapped[list[str]] = mapped_column(ARRAY(sa.Text), nullable=False)
    active: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, server_default=sa.true())
    description: Mapped[str | None] = mapped_column(sa.String(500))
    secret: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    # after a rotation the old secret still signs (beside the new one) until this time
    previous_secret: Mapped[str | None] = mapped_column(sa.String(100))
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # the first failed attempt of the current streak (a success or re-enabling clears it)
    failing_since: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    disabled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))  # by Kassa: 3 days failing
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()


class WebhookDelivery(Base):
    """One event to one endpoint: created once (unique), attempted until it succeeds or gives up."""

    __tablename__ = "webhook_deliveries"
    id: Mapped[uuid.UUID] = uuid_pk()
    endpoint_id: Mapped[uuid.UUID] = mapped_column(
        sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
    )
    event_id: Mapped[str] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False)
    event_type: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # PENDING | SUCCEEDED | FAILED
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    lease_until: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    last_status_code: Mapped[int | None] = mapped_column(sa.SmallInteger)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = created()
    updated_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.UniqueConstraint("event_id", "endpoint_id"),
        sa.Index("webhook_deliveries_due", "next_attempt_at", postgresql_where=sa.text("status = 'PENDING'")),
        sa.Index("webhook_deliveries_endpoint", "endpoint_id", sa.text("created_at DESC")),
        # the deliveries leased per endpoint (claims count their own in the sender since the limit is per process)
        sa.Index(
            "webhook_deliveries_leased",
            "endpoint_id",
            postgresql_where=sa.text("status = 'PENDING' AND lease_until IS NOT NULL"),
        ),
    )


class DeliveryAttempt(Base):
    __tablename__ = "delivery_attempts"
    id: Mapped[uuid.UUID] = uuid_pk()
    delivery_id: Mapped[uuid.UUID] = mapped_column(
        sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False
    )
    attempt: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    status_code: Mapped[int | None] = mapped_column(sa.SmallInteger)
    duration_ms: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    response_body: Mapped[str | None] = mapped_column(sa.Text)  # truncated
    error: Mapped[str | None] = mapped_column(sa.Text)
    next_retry_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.Index("delivery_attempts_delivery", "delivery_id", "attempt"),
        sa.Index("delivery_attempts_retention", "created_at"),
    )


class Notification(Base):
    """One email about one event (kind ``merchant`` or ``receipt``): written PENDING, once
    (unique), with the consumer's transaction; sent by the notifier, then SENT (or FAILED
    once the retry schedule gives up). ``lease_until``: a sender is sending it now."""

    __tablename__ = "notifications"
    id: Mapped[uuid.UUID] = uuid_pk()
    event_id: Mapped[str] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    recipient: Mapped[str] = mapped_column(sa.String(320), nullable=False)
    subject: Mapped[str] = mapped_column(sa.Text, nullable=False)
    body_text: Mapped[str] = mapped_column(sa.Text, nullable=False)
    body_html: Mapped[str | None] = mapped_column(sa.Text)
    status: Mapped[str] = mapped_column(sa.String(10), nullable=False)  # PENDING | SENT | FAILED
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), nullable=False, server_default=NOW)
    lease_until: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    sent_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    created_at: Mapped[datetime] = created()
    __table_args__ = (
        sa.UniqueConstraint("event_id", "kind", name="notifications_event_kind"),
        sa.Index("notifications_due", "next_attempt_at", postgresql_where=sa.text("status = 'PENDING'")),
        # the email claim's turns per recipient domain: what was sent or is under way lately
        sa.Index("notifications_sent", "sent_at", postgresql_where=sa.text("sent_at IS NOT NULL")),
        sa.Index("notifications_leased", "lease_until", postgresql_where=sa.text("lease_until IS NOT NULL")),
    )
