"""An event, as a webhook carried it and as ``GET /events`` returns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kassa_client.models.base import KassaObject
from kassa_client.models.payments import Payment
from kassa_client.models.refunds import Refund

EventData = Payment | Refund | dict[str, Any]


def parse_data(value: Any, event: Mapping[str, Any]) -> EventData:
    """``data`` by the event's type: a ``Payment`` for ``payment.*``, a ``Refund`` for
    ``refund.*``, the JSON object for anything else (``webhook.test``, newer types)."""
    kind = str(event.get("event", ""))
    if not isinstance(value, Mapping):
        raise TypeError(f"an event's data must be an object, got {type(value).__name__}")
    if kind.startswith("payment."):
        return Payment.from_dict(value)
    if kind.startswith("refund."):
        return Refund.from_dict(value)
    return dict(value)


@dataclass(frozen=True, kw_only=True)
class Event(KassaObject):
    """``type`` is the event's name (``payment.completed``; the JSON key ``event``); ``id``
    (``evt_…``) stays the same across every delivery of it, so a receiver can skip repeats."""

    id: str
    type: str = field(metadata={"json": "event"})
    timestamp: datetime
    test_mode: bool
    data: EventData = field(metadata={"parse": parse_data})

    @property
    def payment(self) -> Payment | None:
        """``data`` when it is a payment, else None."""
        return self.data if isinstance(self.data, Payment) else None

    @property
    def refund(self) -> Refund | None:
        """``data`` when it is a refund, else None."""
        return self.data if isinstance(self.data, Refund) else None
