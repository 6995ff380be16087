"""A payment event after a refund carries the payment's refunded and refundable amounts as
they stand, whether the settler takes its reports one by one or in a batch."""

from __future__ import annotations

from kassa_common.statuses import TransferStatus
from tests.support.api import API
from tests.support.transfers import report, settle, settler_batches, tx_hash  # noqa: F401 (autouse)


def test_the_completion_after_a_refund_shows_what_is_left(client, make_merchant, create_payment, sessions):
    m = make_merchant()
    p = create_payment(m, {"amount": 12.34, "token": "USDC", "network": "BASE"})
    settle(sessions, report(p, TransferStatus.CONFIRMED, 5_000_000, 2, tx=tx_hash()))  # partially paid
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "2"}, headers=m.headers())
    assert r.status_code == 201
    settle(sessions, report(p, TransferStatus.CONFIRMED, 10_000_000, 2, tx=tx_hash()))  # now completed
    events = client.get(
        f"{API}/events", query_string={"type": "payment.completed", "payment_id": p["id"]}, headers=m.headers()
    ).get_json()["data"]["data"]
    [completed] = events
    assert completed["data"]["amount_received"] == "15"
    assert (completed["data"]["refunded_amount"], completed["data"]["refundable_amount"]) == ("0", "13")
