"""``kassa.events``: every event of the last 30 days, as its webhooks carried it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from kassa_client.models.events import Event
from kassa_client.pages import Page
from kassa_client.resources.base import DEFAULT_PAGE_SIZE, ITERATE_PAGE_SIZE, Resource, segment


class Events(Resource):
    def list(
        self,
        *,
        type: str | None = None,  # noqa: A002 - the API's name for the filter
        payment_id: str | None = None,
        created_gte: datetime | str | None = None,
        created_lte: datetime | str | None = None,
        page: int = 1,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Page[Event]:
        """One page of events, newest first (``type``: e.g. ``payment.completed``;
        ``payment_id``: the payment's UUID; naive timestamps are taken as UTC)."""
        params = {"type": type, "payment_id": payment_id, "created_gte": created_gte, "created_lte": created_lte}
        return self._page(Event, "/events", params, page, page_size)

    def iterate(
        self,
        *,
        type: str | None = None,  # noqa: A002 - the API's name for the filter
        payment_id: str | None = None,
        created_gte: datetime | str | None = None,
        created_lte: datetime | str | None = None,
        page_size: int = ITERATE_PAGE_SIZE,
    ) -> Iterator[Event]:
        """Every event matching the filters, newest first, fetching pages as needed."""
        return self.list(
            type=type, payment_id=payment_id, created_gte=created_gte, created_lte=created_lte, page_size=page_size
        ).auto_paging_iter()

    def get(self, event_id: str) -> Event:
        return self._object(Event, "GET", f"/events/{segment(event_id)}")
