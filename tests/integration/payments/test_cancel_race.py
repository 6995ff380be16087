"""Cancel racing completion: a merchant cancels through the API at the very moment the
settler applies the confirmed transfer that pays the payment. One wins; the events agree
with it (never payment.canceled after payment.completed, nor the reverse), and the API's
answer matches the final state."""

from __future__ import annotations

import threading
import uuid

import sqlalchemy as sa

from kassa_common.models import Event
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.transfers import report, settle

ROUNDS = 12


def event_types(sessions, payment_id: str) -> list[str]:
    with sessions() as s:
        return list(
            s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(payment_id)).order_by(Event.created_at))
        )


def race(app, sessions, merchant, p) -> tuple[int, str]:
    """Cancel (its own client) and settle the paying transfer at once; the cancel's status."""
    paying = report(p, TransferStatus.CONFIRMED, 12_340_000, 2)
    start = threading.Barrier(2)
    answer: dict = {}

    def cancel():
        client = app.test_client()
        start.wait()
        answer["r"] = client.post(f"{API}/payments/{p['id']}/cancel", headers=merchant.headers("live"))

    def complete():
        start.wait()
        settle(sessions, paying)

    threads = [threading.Thread(target=cancel), threading.Thread(target=complete)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    r = answer["r"]
    return r.status_code, r.get_json()["data"]["status"] if r.status_code == 200 else r.get_json()["error"]["code"]


def test_cancel_racing_completion_has_one_winner_and_events_that_agree(
    app, sessions, live_merchant, create_payment, client
):
    outcomes = set()
    for _ in range(ROUNDS):
        p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
        status_code, said = race(app, sessions, live_merchant, p)
        final = client.get(f"{API}/payments/{p['id']}", headers=live_merchant.headers("live")).get_json()["data"]
        types = event_types(sessions, p["id"])
        if status_code == 200:  # the cancel won: the transfer arrived after it, as a late payment
            assert said == "CANCELED"
            assert final["status"] == "CANCELED"
            assert "payment.completed" not in types
            assert types.count("payment.canceled") == 1
            assert types[-1] == "payment.late_payment", types
            outcomes.add("canceled")
        else:  # completion won: the cancel was refused
            assert (status_code, said) == (409, "CONFLICT")
            assert final["status"] == "COMPLETED"
            assert "payment.canceled" not in types
            assert types.count("payment.completed") == 1
            outcomes.add("completed")
        assert final["amount_received"] == "12.34"
    assert outcomes  # at least one round ran to an outcome (which one wins is up to the race)
