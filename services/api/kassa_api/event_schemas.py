"""Request and response models of the events API (DESIGN.md §3 "Events")."""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from kassa_api.schemas import EventName, ListPage, PageMeta


class ListEvents(ListPage):
    type: Optional[EventName] = Field(None, description="only events of this type")
    payment_id: Optional[uuid.UUID] = Field(None, description="only events of this payment (its UUID)")
    created_gte: Optional[datetime] = Field(None, description="created at or after (ISO 8601; UTC if no offset)")
    created_lte: Optional[datetime] = Field(None, description="created at or before (ISO 8601; UTC if no offset)")


class EventOut(BaseModel):
    """An event exactly as its webhook carried it."""

    id: str = Field(description="evt_…; the X-Kassa-Event-Id of its webhooks")
    event: EventName
    timestamp: str
    test_mode: bool
    data: dict[str, Any] = Field(description="the payment object at the time of the event, with payment_id")


class EventPage(BaseModel):
    data: list[EventOut]
    meta: PageMeta


