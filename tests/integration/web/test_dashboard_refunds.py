"""Dashboard refunds through the Flask test client on real PostgreSQL: bad input gets the page
again with the reason (a 4xx, never a 500), another merchant's refund is a 404, and the
transaction hash form uses the API's checks."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
import sqlalchemy as sa

from kassa_common import payments
from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Refund
from kassa_common.refunds import transitions
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT, PAYMENT, set_live_wallet
from tests.support.dashboard import assert_beside, csrf_of, merchant_with_password
from tests.support.transfers import report

CUSTOMER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


@pytest.fixture
def dash(client, sessions):
    email = merchant_with_password(sessions)
    token = csrf_of(client.get("/dashboard/login"))
    client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})
    with unit_of_work(sessions) as s:
        merchant = s.scalars(sa.select(Merchant).where(Merchant.email == email)).one()
        client.merchant_id = merchant.id
        client.keys = {m: keys.create_key(s, merchant.id, m, list(keys.SCOPES)).key for m in ("test", "live")}
    set_live_wallet(sessions, client.merchant_id)
    client.token = csrf_of(client.get("/dashboard/keys"))
    return client


def post(dash, path, **data):
    return dash.post(path, data={"csrf_token": dash.token, **data})


def paid(dash, sessions, mode: str = "test") -> dict:
    body = PAYMENT if mode == "test" else LIVE_PAYMENT
    r = dash.post(f"{API}/payments", json=body, headers={"X-Api-Key": dash.keys[mode]})
    assert r.status_code == 201, r.get_data(as_text=True)
    p = r.get_json()["data"]
    with unit_of_work(sessions) as s:
        payments.settle(s, report(p, TransferStatus.CONFIRMED, 15_000_000, 12))
    return p


def test_a_refund_form_with_a_bad_amount_shows_why_on_the_payment_page(dash, sessions):
    p = paid(dash, sessions)
    page = dash.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)
    assert 'value="2.66"' in page and "the excess over what was due" in page
    for amount, why in (("abc", "must be a plain decimal number"), ("16", "more than is refundable"), ("-1", "")):
        r = post(dash, f"/dashboard/payments/{p['short_id']}/refunds", amount=amount, network="BASE")
        shown = r.get_data(as_text=True)
        assert r.status_code == 422 and 'id="refund-error"' in shown, amount
        assert 'id="refund-amount-1-error"' in shown and why in shown, amount
        assert f'value="{amount}"' in shown  # what was typed is kept
    with sessions() as s:
        assert (
            s.scalar(sa.select(sa.func.count()).select_from(Refund).where(Refund.merchant_id == dash.merchant_id)) == 0
        )


def test_another_merchants_refund_is_a_404(dash, sessions, make_merchant, client):
    other = make_merchant()
    r = client.post(f"{API}/payments", json=PAYMENT, headers=other.headers())
    p = r.get_json()["data"]
    with unit_of_work(sessions) as s:
        payments.settle(s, report(p, TransferStatus.CONFIRMED, 12_340_000, 12))
    refund = client.post(f"{API}/payments/{p['id']}/refunds", json={}, headers=other.headers()).get_json()["data"]
    assert dash.get(f"/dashboard/refunds/{refund['id']}").status_code == 404
    assert dash.get("/dashboard/refunds/not-a-uuid").status_code == 404
    assert post(dash, f"/dashboard/refunds/{refund['id']}/cancel", confirm="yes").status_code == 404
    assert post(dash, f"/dashboard/refunds/{refund['id']}/complete", transaction_hash="x").status_code == 404


def test_cancel_needs_the_confirmation_and_the_hash_form_gives_the_reasons(dash, sessions):
    post(dash, "/dashboard/mode", mode="live", next="/dashboard/payments")
    p = paid(dash, sessions, "live")
    r = post(dash, f"/dashboard/payments/{p['short_id']}/refunds", amount="1")
    rid = r.headers["Location"].rsplit("/", 1)[-1]
    assert "awaiting address" in dash.get(f"/dashboard/refunds/{rid}").get_data(as_text=True)

    r = post(dash, f"/dashboard/refunds/{rid}/complete", transaction_hash="0x" + "ab" * 32)
    assert r.status_code == 409 and "not claimed it yet" in r.get_data(as_text=True)
    with unit_of_work(sessions) as s:
        transitions.claim_refund(s, s.get(Refund, uuid.UUID(rid)).claim_token, CUSTOMER)
    r = post(dash, f"/dashboard/refunds/{rid}/complete", transaction_hash="0x1234")
    assert r.status_code == 400 and "not a transaction hash" in r.get_data(as_text=True)
    assert_beside(r.get_data(as_text=True), "transaction_hash", "not a transaction hash")
    assert 'value="0x1234"' in r.get_data(as_text=True)  # what was typed is kept
    r = post(dash, f"/dashboard/refunds/{rid}/complete", transaction_hash="")
    assert r.status_code == 400
    assert_beside(r.get_data(as_text=True), "transaction_hash", "Enter the hash of the transaction")
    r = post(dash, f"/dashboard/refunds/{rid}/complete", transaction_hash="0x" + "ab" * 32)
    assert r.status_code == 503 and "LOCAL_EVM node is unavailable" in r.get_data(as_text=True)  # none runs here

    r = post(dash, f"/dashboard/refunds/{rid}/cancel")
    assert r.status_code == 400 and "Tick the box" in r.get_data(as_text=True)
    assert 'id="cancel-confirm-error"' in r.get_data(as_text=True)  # beside the box, tied to it
    assert 'aria-describedby="cancel-confirm-error"' in r.get_data(as_text=True)
    r = post(dash, f"/dashboard/refunds/{rid}/cancel", confirm="yes")
    assert r.status_code == 303
    assert "canceled" in dash.get(f"/dashboard/refunds/{rid}").get_data(as_text=True)
    r = post(dash, f"/dashboard/refunds/{rid}/cancel", confirm="yes")
    assert r.status_code == 409


def test_late_and_wrong_network_funds_are_offered_in_full(dash, sessions):
    r = dash.post(f"{API}/payments", json=PAYMENT, headers={"X-Api-Key": dash.keys["test"]})
    late = r.get_json()["data"]
    assert dash.post(f"{API}/payments/{late['id']}/cancel", headers={"X-Api-Key": dash.keys["test"]}).status_code == 200
    with unit_of_work(sessions) as s:
        payments.settle(s, report(late, TransferStatus.CONFIRMED, 12_340_000, 12))
    page = dash.get(f"/dashboard/payments/{late['short_id']}").get_data(as_text=True)
    assert "the payment was paid after it closed" in page and 'value="12.34"' in page

    r = dash.post(f"{API}/payments", json=PAYMENT, headers={"X-Api-Key": dash.keys["test"]})
    stray = r.get_json()["data"]
    elsewhere = dataclasses.replace(report(stray, TransferStatus.CONFIRMED, 7_000_000, 12), network="ETHEREUM")
    with unit_of_work(sessions) as s:
        payments.settle(s, elsewhere)
    page = dash.get(f"/dashboard/payments/{stray['short_id']}").get_data(as_text=True)
    assert "everything sent on the wrong network (ETHEREUM)" in page and 'value="7"' in page
    assert 'name="network" value="ETHEREUM"' in page
    r = post(dash, f"/dashboard/payments/{stray['short_id']}/refunds", amount="7", network="ETHEREUM")
    rid = r.headers["Location"].rsplit("/", 1)[-1]
    with sessions() as s:
        refund = s.get(Refund, uuid.UUID(rid))
        assert (refund.network, int(refund.amount_units), refund.status) == ("ETHEREUM", 7_000_000, "AWAITING_ADDRESS")


def test_a_refund_form_with_two_bad_values_shows_both_beside_their_fields(dash, sessions):
    p = paid(dash, sessions)
    r = post(dash, f"/dashboard/payments/{p['short_id']}/refunds", amount="abc", reason="r" * 501, network="BASE")
    page = r.get_data(as_text=True)
    assert r.status_code == 422 and "2 fields need a change" in page
    assert_beside(page, "refund-amount-1", "Amount must be a plain decimal")
    assert_beside(page, "refund-reason-1", "Reason can be at most 500")
    assert 'value="abc"' in page and f'value="{"r" * 501}"' in page
    with sessions() as s:
        assert (
            s.scalar(sa.select(sa.func.count()).select_from(Refund).where(Refund.merchant_id == dash.merchant_id)) == 0
        )
