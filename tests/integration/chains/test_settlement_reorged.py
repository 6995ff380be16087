"""What a ``chain.transfer.reorged`` report (a confirmed transfer lost in a reorg deeper than
the confirmations) does to its payment, on the real database, read back through the API:
recorded as lost, ``payment.reorged`` once, ``amount_received`` down to what still stands,
the status kept; and the reports a settler may get out of order around it."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from kassa_common.models import Event
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.transfers import report, settle, settler_batches  # noqa: F401 (autouse)
from tests.support.transfers import tx_hash as tx

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
REQUIRED = 2  # LOCAL_EVM's


@pytest.fixture
def live(live_merchant, create_payment):
    """A live 12.34 USDC payment on LOCAL_EVM."""
    return create_payment(live_merchant, LIVE_PAYMENT, mode="live")


def get(client, merchant, p) -> dict:
    r = client.get(f"{API}/payments/{p['id']}", headers=merchant.headers("live"))
    assert r.status_code == 200
    return r.get_json()["data"]


def events(sessions, p) -> list[str]:
    with sessions() as s:
        return list(
            s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(p["id"])).order_by(Event.created_at))
        )


def test_a_completed_payment_keeps_its_status_records_the_loss_and_fires_payment_reorged_once(
    client, sessions, live_merchant, live
):
    first, second = tx(), tx()
    settle(
        sessions,
        report(live, CONFIRMED, 10_000_000, REQUIRED, tx=first, block_hash="0xb1"),
        report(live, CONFIRMED, 2_340_000, REQUIRED, tx=second, block_hash="0xb2", log_index=1),
    )
    assert get(client, live_merchant, live)["status"] == "COMPLETED"
    lost = report(live, REORGED, 2_340_000, REQUIRED, tx=second, block_hash="0xb2", log_index=1)
    settle(sessions, lost)
    settle(sessions, lost)  # redelivered: nothing more
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"], got["transaction_hash"]) == ("COMPLETED", "10", first)
    shown = {t["tx_hash"]: t for t in got["transfers"]}
    assert (shown[second]["status"], shown[second]["counted"]) == ("REORGED", False)
    assert "reorganisation deeper than the required confirmations" in shown[second]["reason"]
    assert shown[first]["status"] == "CONFIRMED"
    assert events(sessions, live).count("payment.reorged") == 1


def test_a_partly_paid_payment_drops_what_was_lost_and_completes_when_it_is_mined_again(
    client, sessions, live_merchant, live
):
    part = tx()
    settle(sessions, report(live, CONFIRMED, 12_340_000, REQUIRED, tx=part, block_hash="0xb1"))
    settle(sessions, report(live, REORGED, 12_340_000, REQUIRED, tx=part, block_hash="0xb1"))
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"], got["transaction_hash"]) == ("COMPLETED", "0", None)
    settle(sessions, report(live, CONFIRMED, 12_340_000, REQUIRED, tx=part, block_hash="0xb9"))  # mined again
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"], got["transfers"][0]["status"]) == ("COMPLETED", "12.34", "CONFIRMED")
    assert events(sessions, live) == ["payment.created", "payment.completed", "payment.reorged"]


def test_a_late_confirmation_of_the_lost_block_counts_nothing(client, sessions, live_merchant, live):
    gone = tx()
    settle(
        sessions,
        report(live, REORGED, 12_340_000, REQUIRED, tx=gone, block_hash="0xb1"),  # it overtook…
        report(live, CONFIRMED, 12_340_000, REQUIRED, tx=gone, block_hash="0xb1"),
    )  # …the confirmation
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"]) == ("PENDING", "0")
    assert [t["status"] for t in got["transfers"]] == ["REORGED"]
    assert "payment.completed" not in events(sessions, live)


def test_a_reorged_report_of_the_block_a_transfer_left_is_no_news(client, sessions, live_merchant, live):
    moved = tx()
    settle(
        sessions,
        report(live, CONFIRMED, 12_340_000, REQUIRED, tx=moved, block_hash="0xnew"),
        report(live, REORGED, 12_340_000, REQUIRED, tx=moved, block_hash="0xold"),
    )
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"], got["transfers"][0]["status"]) == ("COMPLETED", "12.34", "CONFIRMED")
    assert "payment.reorged" not in events(sessions, live)


def test_a_seen_transfer_reported_reorged_releases_the_payment(client, sessions, live_merchant, live):
    seen = tx()
    settle(sessions, report(live, SEEN, 12_340_000, 1, tx=seen, block_hash="0xb1"))
    assert get(client, live_merchant, live)["transaction_hash"] == seen
    settle(sessions, report(live, REORGED, 12_340_000, REQUIRED, tx=seen, block_hash="0xb1"))
    got = get(client, live_merchant, live)
    assert (got["status"], got["transaction_hash"], got["confirmations"]) == ("PENDING", None, 0)
    cancel = client.post(f"{API}/payments/{live['id']}/cancel", headers=live_merchant.headers("live"))
    assert cancel.status_code == 200  # nothing holds it open any more
