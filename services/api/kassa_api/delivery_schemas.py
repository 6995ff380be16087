"""Request and response models of the webhook delivery log, redeliver and test endpoints."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional

from pydantic import BaseModel, Field

from kassa_common.messages import DeliveryStatus as _Status
from kassa_api.schemas import ListPage

if TYPE_CHECKING:
    DeliveryStatus = str
else:  # the statuses, as a Literal for the OpenAPI document
    DeliveryStatus = Literal[tuple(s.value for s in _Status)]


class ListDeliveries(ListPage):
    status: Optional[DeliveryStatus] = Field(None, description="only deliveries in this status")


class AttemptOut(BaseModel):
    attempt: int
    status_code: Optional[int] = Field(description="HTTP status, null when no response came")
    duration_ms: int
    error: Optional[str]
    next_retry_at: Optional[str] = Field(description="when the next attempt is due; null after the last")
    created_at: str


class DeliveryOut(BaseModel):
    id: str
    webhook_id: str
    event_id: str
    event: str = Field(description="event type, e.g. payment.completed or webhook.test")
    status: DeliveryStatus
    attempts: int
    last_status_code: Optional[int]
    last_error: Optional[str]
    next_attempt_at: Optional[str]
    created_at: str
    updated_at: str
    attempts_log: list[AttemptOut]
