"""Messaging: the outbox of domain events, and the message ids each consumer has handled."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from kassa_common.models.base import Base, created


class Event(Base):
    """Outbox: a domain event written in the transaction of the change it describes."""

    __tablename__ = "events"
    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)  # evt_...
    type: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    merchant_id: Mapped[uuid.UUID] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"), nullable=False)
    test_mode: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    payment_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = created()
    published_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    __table_args__ = (
        sa.Index("events_unpublished", "created_at", postgresql_where=sa.text("published_at IS NULL")),
        sa.Index("events_payment", "payment_id", "created_at"),
        sa.Index("events_merchant_list", "merchant_id", "test_mode", sa.text("created_at DESC"), "id"),
        sa.Index("events_retention", "created_at"),
    )


class ProcessedMessage(Base):
    """Consumer idempotency: a message id recorded in the transaction that handled it."""

    __tablename__ = "processed_messages"
    consumer: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    message_id: Mapped[str] = mapped_column(sa.String(100), primary_key=True)
    created_at: Mapped[datetime] = created()
    __table_args__ = (sa.Index("processed_messages_retention", "created_at"),)
