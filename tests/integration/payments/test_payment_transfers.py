"""``transfers`` on the payment object (DESIGN.md §3): every transfer to the payment's
address, counted or not and why not, in the API (get, list), in each webhook's ``data``
and on the dashboard's payment detail. Reports go through ``payments.settle`` as the chain
watcher sends them."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Event
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.transfers import report, settle, settler_batches, tx_hash  # noqa: F401 (autouse)

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus


def get(client, merchant, p, mode="live") -> dict:
    r = client.get(f"{API}/payments/{p['short_id']}", headers=merchant.headers(mode))
    assert r.status_code == 200
    return r.get_json()["data"]


def stray(p: dict, token: str, network: str, units: int) -> TransferReport:
    return TransferReport(
        CONFIRMED,
        network,
        tx_hash(),
        3,
        token,
        p["address"].lower(),
        units,
        block_number=100,
        block_hash="0xb1",
        confirmations=2,
    )


def test_a_new_payment_has_no_transfers(client, live_merchant, create_payment):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    assert p["transfers"] == []
    assert get(client, live_merchant, p)["transfers"] == []


def test_each_transfer_shows_whether_it_counts_and_why_not(client, sessions, live_merchant, create_payment):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")  # 12.34 USDC on LOCAL_EVM
    own = report(p, CONFIRMED, 5_000_000, 2, tx=tx_hash())
    dropped = report(p, SEEN, 1_000_000, 1, tx=tx_hash(), log_index=1)
    settle(
        sessions,
        own,
        dropped,
        report(p, ORPHANED, 1_000_000, 0, tx=dropped.tx_hash, log_index=1),
        stray(p, "USDT", "LOCAL_EVM", 7_000_000),
    )

    got = {t["tx_hash"]: t for t in get(client, live_merchant, p)["transfers"]}
    assert got[own.tx_hash] == {
        "network": "LOCAL_EVM",
        "token": "USDC",
        "tx_hash": own.tx_hash,
        "log_index": 0,
        "amount": "5",
        "confirmations": 2,
        "status": "CONFIRMED",
        "counted": True,
        "reason": None,
        "late": False,
        "created_at": got[own.tx_hash]["created_at"],
    }
    assert got[dropped.tx_hash]["status"] == "ORPHANED" and got[dropped.tx_hash]["counted"] is False
    assert "reorganisation" in got[dropped.tx_hash]["reason"]
    other = next(t for t in got.values() if t["token"] == "USDT")
    assert (other["amount"], other["counted"]) == ("7", False)
    assert other["reason"] == "USDT is not the payment's token USDC"


def test_the_list_carries_each_payments_own_transfers(client, sessions, live_merchant, create_payment):
    paid, unpaid = (create_payment(live_merchant, LIVE_PAYMENT, mode="live") for _ in range(2))
    settle(sessions, report(paid, SEEN, 2_000_000, 1))
    r = client.get(f"{API}/payments?pageSize=2", headers=live_merchant.headers("live"))
    listed = {p["id"]: p["transfers"] for p in r.get_json()["data"]["data"]}
    assert [t["status"] for t in listed[paid["id"]]] == ["SEEN"] and listed[unpaid["id"]] == []


def test_the_webhook_data_carries_the_transfers_at_that_moment(sessions, live_merchant, create_payment):
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    full = report(p, CONFIRMED, 12_340_000, 2)
    settle(sessions, full)
    with sessions() as s:
        payloads = dict(
            s.execute(sa.select(Event.type, Event.payload).where(Event.payment_id == uuid.UUID(p["id"]))).all()
        )
    assert payloads["payment.created"]["data"]["transfers"] == []
    completed = payloads["payment.completed"]["data"]
    assert [(t["tx_hash"], t["amount"], t["counted"]) for t in completed["transfers"]] == [
        (full.tx_hash, "12.34", True)
    ]


def test_the_dashboard_detail_shows_a_transfer_that_does_not_count_and_why(dash, sessions, app):
    from kassa_common.accounts import keys
    from kassa_common.db import unit_of_work
    from kassa_common.models import Merchant

    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", ["payments:create"]).key
    p = (
        app.test_client()
        .post(f"{API}/payments", json={"amount": 2, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key})
        .json["data"]
    )
    other = stray(p, "USDT", "BASE", 2_000_000)
    settle(sessions, other)
    detail = dash.get(f"/dashboard/payments/{p['short_id']}").get_data(as_text=True)
    assert other.tx_hash in detail and "2 USDT on Base" in detail
    assert "Not counted: USDT is not the payment&#39;s token USDC." in detail
