"""Twenty refund requests of one payment at once never refund more than it received, and
twenty with one Idempotency-Key make one refund (DESIGN §8)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import sqlalchemy as sa

from kassa_common.models import Refund
from tests.support.api import API


def test_twenty_concurrent_refunds_never_exceed_what_was_received(app, make_merchant, paid_payment, sessions):
    m = make_merchant()
    p = paid_payment(m, 10_000_000)  # 10 USDC; each asks 0.75: at most 13 fit
    start = threading.Barrier(20)

    def post(_):
        with app.test_client() as c:
            start.wait()
            r = c.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "0.75"}, headers=m.headers())
            return r.status_code, r.get_json()

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(post, range(20)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [201] * 13 + [400] * 7, statuses
    refused = [body["error"] for status, body in results if status == 400]
    assert all(e["code"] == "VALIDATION_ERROR" and "more than is refundable" in e["message"] for e in refused)
    with sessions() as s:
        units = s.scalar(sa.select(sa.func.sum(Refund.amount_units)).where(Refund.payment_id == p["id"]))
    assert Decimal(units) == 13 * 750_000 <= 10_000_000
    with app.test_client() as c:
        shown = c.get(f"{API}/payments/{p['id']}", headers=m.headers()).get_json()["data"]
    assert shown["refundable_amount"] == "0.25"


def test_twenty_concurrent_refunds_with_one_key_make_one(app, make_merchant, paid_payment, sessions):
    m = make_merchant()
    p = paid_payment(m, 10_000_000)
    start = threading.Barrier(20)

    def post(_):
        with app.test_client() as c:
            start.wait()
            r = c.post(
                f"{API}/payments/{p['id']}/refunds",
                json={"amount": "1"},
                headers=m.headers(**{"Idempotency-Key": "one-refund"}),
            )
            return r.status_code, r.get_json()

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(post, range(20)))
    assert {status for status, _ in results} == {201}, results
    assert len({body["data"]["id"] for _, body in results}) == 1
    with sessions() as s:
        count = s.scalar(sa.select(sa.func.count()).select_from(Refund).where(Refund.payment_id == p["id"]))
    assert count == 1
