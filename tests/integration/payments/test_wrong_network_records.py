"""Wrong network, the settlement side without a chain: what a transfer report from another
EVM network's watcher does to a payment (recorded once confirmed, never counted, one
payment.wrong_network per transfer however often reported), and how the dashboard's payment
page tells the merchant to recover it in each settlement mode."""

from __future__ import annotations

import dataclasses
import uuid

import sqlalchemy as sa

from kassa_common.accounts import merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Event, Merchant
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT, new_key, set_live_wallet
from tests.support.dashboard import signed_in
from tests.support.forwarder import fresh_address
from tests.support.transfers import report, settle, settler_batches  # noqa: F401 (autouse)

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
SECOND = "LOCAL_EVM_2"


def on_second(p: dict, status: TransferStatus, confirmations: int, **kw):
    """The payment's own token, reported by LOCAL_EVM_2's watcher."""
    return dataclasses.replace(report(p, status, 5_000_000, confirmations, **kw), network=SECOND)


def live_payment(client, sessions, merchant_id) -> dict:
    key = new_key(sessions, merchant_id, "live", ["payments:create", "payments:read"])
    r = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers={"X-Api-Key": key})
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"] | {"key": key}


def events(sessions, pid: str, event_type: str) -> int:
    with sessions() as s:
        return s.scalar(
            sa.select(sa.func.count())
            .select_from(Event)
            .where(Event.payment_id == uuid.UUID(pid), Event.type == event_type)
        )


def got(client, p: dict) -> dict:
    return client.get(f"{API}/payments/{p['id']}", headers={"X-Api-Key": p["key"]}).get_json()["data"]


def test_a_wrong_network_transfer_is_recorded_once_confirmed_and_reported_once(client, sessions, live_merchant):
    p = live_payment(client, sessions, live_merchant.id)
    seen = on_second(p, SEEN, 1)

    settle(sessions, seen)
    assert got(client, p)["wrong_network"] == [] and events(sessions, p["id"], "payment.wrong_network") == 0

    confirmed = dataclasses.replace(seen, status=CONFIRMED, confirmations=2)
    settle(sessions, confirmed, confirmed, dataclasses.replace(seen, confirmations=1))  # redelivered, late SEEN

    shown = got(client, p)
    assert shown["status"] == "PENDING" and shown["amount_received"] == "0" and shown["transaction_hash"] is None
    assert shown["wrong_network"] == [
        {
            "network": SECOND,
            "token": "USDC",
            "amount": "5",
            "transaction_hash": seen.tx_hash,
            "log_index": 0,
            "recovery": "wallet",
        }
    ]
    assert events(sessions, p["id"], "payment.wrong_network") == 1
    assert events(sessions, p["id"], "payment.detected") == 0


def test_each_wrong_network_transfer_fires_its_own_event_whatever_the_status(client, sessions, live_merchant):
    p = live_payment(client, sessions, live_merchant.id)
    settle(sessions, dataclasses.replace(report(p, CONFIRMED, 12_340_000, 2), log_index=3))  # paid in full
    assert got(client, p)["status"] == "COMPLETED"

    settle(sessions, on_second(p, CONFIRMED, 2), on_second(p, CONFIRMED, 2, log_index=1))

    shown = got(client, p)
    assert shown["status"] == "COMPLETED" and shown["amount_received"] == "12.34"
    assert len(shown["wrong_network"]) == 2
    assert events(sessions, p["id"], "payment.wrong_network") == 2


def live_dashboard(client, sessions):
    """Log a new merchant in, switch to live mode; the merchant's id."""
    signed_in(client, sessions, "live")
    with sessions() as s:
        return s.scalars(sa.select(Merchant.id).where(Merchant.email == client.email)).one()


def test_the_dashboard_says_an_xpub_merchant_already_holds_the_funds(client, sessions):
    mid = live_dashboard(client, sessions)
    set_live_wallet(sessions, mid)
    p = live_payment(client, sessions, mid)
    settle(sessions, on_second(p, CONFIRMED, 2))

    page = client.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)

    assert 'id="wrong-network"' in page and "5 USDC on <strong>LOCAL_EVM_2</strong>" in page
    assert "Already yours" in page and "Add LOCAL_EVM_2 to that wallet" in page
    assert "5 USDC on LOCAL_EVM_2 · confirmed" in page  # in token units, though LOCAL_EVM_2 is not configured here
    assert "Not counted: sent on LOCAL_EVM_2, not on the payment&#39;s network LOCAL_EVM." in page


def test_the_dashboard_says_a_forwarder_deposit_is_swept_on_that_network(client, sessions):
    mid = live_dashboard(client, sessions)
    settlement = fresh_address()
    with unit_of_work(sessions) as s:
        merchants.set_settlement_address(s, mid, "live", settlement)
    p = live_payment(client, sessions, mid)
    settle(sessions, on_second(p, CONFIRMED, 2))

    page = client.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)

    assert f"forwards only to <code>{settlement}</code>" in page and "the sweeper moves it there on LOCAL_EVM_2" in page
    # this server has no LOCAL_EVM_2 RPC URL: the page says what the operator must set up
    assert "kassa contracts deploy --network LOCAL_EVM_2" in page
    assert got(client, p)["wrong_network"][0]["recovery"] == "sweep"
