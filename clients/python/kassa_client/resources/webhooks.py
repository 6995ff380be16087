"""``kassa.webhooks``: endpoints (create, get, list, iterate, update, delete,
rotate_secret, test) and ``kassa.webhooks.deliveries`` (list, iterate, redeliver)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kassa_client.models.webhooks import Delivery, Webhook
from kassa_client.pages import Page
from kassa_client.resources.base import (
    DEFAULT_PAGE_SIZE,
    ITERATE_PAGE_SIZE,
    UNSET,
    Resource,
    given,
    segment,
)
from kassa_client.transport import Transport


class Deliveries(Resource):
    """The delivery log of an endpoint: every event sent to it, with every attempt."""

    def list(
        self, webhook_id: str, *, status: str | None = None, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Page[Delivery]:
        """One page of the endpoint's deliveries, newest first (``status``: PENDING,
        SUCCEEDED or FAILED)."""
        return self._page(Delivery, f"/webhooks/{segment(webhook_id)}/deliveries", {"status": status}, page, page_size)

    def iterate(
        self, webhook_id: str, *, status: str | None = None, page_size: int = ITERATE_PAGE_SIZE
    ) -> Iterator[Delivery]:
        return self.list(webhook_id, status=status, page_size=page_size).auto_paging_iter()

    def redeliver(self, webhook_id: str, delivery_id: str) -> Delivery:
        """Send a delivery again now (same event id, a new attempt)."""
        path = f"/webhooks/{segment(webhook_id)}/deliveries/{segment(delivery_id)}/redeliver"
        return self._object(Delivery, "POST", path)


class Webhooks(Resource):
    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.deliveries = Deliveries(transport)

    def create(
        self,
        *,
        url: str,
        events: Sequence[str] | None = None,
        description: str | None = None,
        active: bool | None = None,
        **extra: Any,
    ) -> Webhook:
        """Register an endpoint (``events``: the event types to send; all by default). The
        answer's ``secret`` signs every delivery and is shown only here: store it."""
        body = {
            "url": url,
            "events": None if events is None else list(events),
            "description": description,
            "active": active,
            **extra,
        }
        return self._object(Webhook, "POST", "/webhooks", body={k: v for k, v in body.items() if v is not None})

    def get(self, webhook_id: str) -> Webhook:
        return self._object(Webhook, "GET", f"/webhooks/{segment(webhook_id)}")

    def list(self, *, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> Page[Webhook]:
        return self._page(Webhook, "/webhooks", {}, page, page_size)

    def iterate(self, *, page_size: int = ITERATE_PAGE_SIZE) -> Iterator[Webhook]:
        return self.list(page_size=page_size).auto_paging_iter()

    def update(
        self,
        webhook_id: str,
        *,
        url: str = UNSET,
        events: Sequence[str] = UNSET,
        active: bool = UNSET,
        description: str | None = UNSET,
        **extra: Any,
    ) -> Webhook:
        """Change only the fields given (``active=False`` pauses deliveries)."""
        body = given(
            url=url, events=events if events is UNSET else list(events), active=active, description=description, **extra
        )
        return self._object(Webhook, "PATCH", f"/webhooks/{segment(webhook_id)}", body=body)

    def delete(self, webhook_id: str) -> bool:
        data = self._data("DELETE", f"/webhooks/{segment(webhook_id)}")
        return isinstance(data, dict) and data.get("deleted") is True

    def rotate_secret(self, webhook_id: str) -> Webhook:
        """Replace the signing secret; the answer's ``secret`` is the new one (shown only here)."""
        return self._object(Webhook, "POST", f"/webhooks/{segment(webhook_id)}/rotate-secret")

    def test(self, webhook_id: str) -> Delivery:
        """Send a ``webhook.test`` event to this endpoint now; returns its delivery."""
        return self._object(Delivery, "POST", f"/webhooks/{segment(webhook_id)}/test")
