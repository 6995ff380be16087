"""/webhooks/:id/deliveries, redeliver and test: the delivery log of an endpoint."""

from __future__ import annotations

from flask import Blueprint

from kassa_common.paging import page_meta
from kassa_common.webhooks import deliveries
from kassa_common.webhooks.deliveries import DeliveryOut, ListDeliveries
from kassa_api.auth import owner
from kassa_api.deps import db, transaction
from kassa_api.endpoint import endpoint

bp = Blueprint("deliveries", __name__)
SCOPE = "webhooks:manage"


@bp.get("/webhooks/<ref>/deliveries")
@endpoint(
    "List an endpoint's deliveries with every attempt, newest first",
    scope=SCOPE,
    tag="webhooks",
    query=ListDeliveries,
    response=list[DeliveryOut],
    envelope_kind="list",
    errors=(404,),
)
def list_deliveries(ref: str, query: ListDeliveries):
    items, total = deliveries.list_deliveries(db(), owner(), ref, query.page, query.pageSize, query.status)
    return {"data": items, "meta": page_meta(query.page, query.pageSize, total)}


@bp.post("/webhooks/<ref>/deliveries/<delivery_id>/redeliver")
@endpoint(
    "Send a delivery again now (same event id)", scope=SCOPE, tag="webhooks", response=DeliveryOut, errors=(404, 422)
)
def redeliver(ref: str, delivery_id: str):
    with transaction() as session:
        found = deliveries.redeliver(session, owner(), ref, delivery_id)
        return deliveries.delivery_with_log(session, found)


@bp.post("/webhooks/<ref>/test")
@endpoint(
    "Send a webhook.test event to this endpoint", scope=SCOPE, tag="webhooks", response=DeliveryOut, errors=(404, 422)
)
def send_test(ref: str):
    with transaction() as session:
        found = deliveries.send_test(session, owner(), ref)
        return deliveries.delivery_with_log(session, found)
