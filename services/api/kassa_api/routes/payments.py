"""/payments: create, get, list, cancel."""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint

from kassa_common import payments
from kassa_common.paging import page_meta
from kassa_common.payments import payment_object
from kassa_common.transfers import transfers_of
from kassa_api.actors import api_actor
from kassa_api.auth import owner
from kassa_api.deps import connection, db, deps, transaction
from kassa_api.endpoint import endpoint, idempotency_key
from kassa_api.schemas import CreatePayment, ListPayments, PaymentOut, PaymentPage

bp = Blueprint("payments", __name__)


@bp.post("/payments")
@endpoint(
    "Create a payment",
    scope="payments:create",
    tag="payments",
    body=CreatePayment,
    response=PaymentOut,
    status=201,
    errors=(409, 422, 503),
)
def create_payment(body: CreatePayment):
    key, s = idempotency_key(), deps().settings
    created = payments.create_payment(  # one statement writes it: no transaction around it
        connection(),
        owner(),
        payments.NewPayment(**body.model_dump()),
        registry=s.networks,
        rates=deps().rates,
        checkout_base=s.checkout_url,
        idempotency_key=key,
        idempotency_ttl=timedelta(hours=s.idempotency_ttl_hours),
        allow_test_keys=s.development,
    )
    headers = {"Idempotent-Replayed": "true"} if created.replayed else {}
    return created.payment, 201, headers


@bp.get("/payments/<ref>")
@endpoint("Get a payment by id or short id", scope="payments:read", tag="payments", response=PaymentOut, errors=(404,))
def get_payment(ref: str):
    return payment_object(payments.find_payment(db(), owner(), ref))


@bp.get("/payments")
@endpoint(
    "List payments, newest first", scope="payments:read", tag="payments", query=ListPayments, response=PaymentPage
)
def list_payments(query: ListPayments):
    rows, total = payments.list_payments(
        db(), owner(), page=query.page, page_size=query.pageSize, status=query.status, search=query.search
    )
    transfers = transfers_of(db(), [p.id for p in rows])
    return {
        "data": [payment_object(p, transfers.get(p.id, [])) for p in rows],
        "meta": page_meta(query.page, query.pageSize, total),
    }


@bp.post("/payments/<ref>/cancel")
@endpoint("Cancel a pending payment", scope="payments:create", tag="payments", response=PaymentOut, errors=(404, 409))
def cancel_payment(ref: str):
    with transaction() as session:
        payment = payments.cancel_payment(session, owner(), ref, actor=api_actor())
    return payment_object(payment)
