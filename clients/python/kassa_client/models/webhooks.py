"""A webhook endpoint and its delivery log."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kassa_client.models.base import KassaObject


@dataclass(frozen=True, kw_only=True)
class Webhook(KassaObject):
    """An endpoint receiving signed event deliveries. ``secret`` (``whsec_…``) is set only
    in the answers of create and rotate-secret: keep it, it is never shown again."""

    id: str
    url: str
    events: list[str] = field(default_factory=list)
    active: bool
    description: str | None = None
    test_mode: bool
    created_at: datetime
    updated_at: datetime | None = None
    secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class DeliveryAttempt(KassaObject):
    """One attempt to deliver: the HTTP status (None when no answer came), how long it
    took, the error, and when the next attempt is due (None after the last)."""

    attempt: int
    status_code: int | None = None
    duration_ms: int
    error: str | None = None
    next_retry_at: datetime | None = None
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class Delivery(KassaObject):
    """One event on its way to one endpoint, with every attempt (``attempts_log``)."""

    id: str
    webhook_id: str
    event_id: str
    event: str
    status: str
    attempts: int
    last_status_code: int | None = None
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    created_at: datetime
    updated_at: datetime | None = None
    attempts_log: list[DeliveryAttempt] = field(default_factory=list)
