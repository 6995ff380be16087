"""What transfer reports do to a payment, reported as the chain watcher sends them (its
``TransferReport`` through ``payments.settle``, on the real database) and read back through
the API and the checkout's status JSON: reports that arrive late, out of order, twice, for
nothing, or for a transfer a reorg took away."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from kassa_common.chains.networks import load_registry
from kassa_common.models import Event, Transfer
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.statements import statements
from tests.support.transfers import report, settle, settler_batches  # noqa: F401 (autouse)
from tests.support.transfers import tx_hash as tx

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
REQUIRED = 6


@pytest.fixture(scope="module")
def client(settings, base_env, engine):
    """The API with LOCAL_EVM needing 6 confirmations, so a transfer is seen at several counts."""
    from kassa_api.app import create_app

    networks = load_registry({**base_env, "LOCAL_EVM_CONFIRMATIONS": str(REQUIRED)})
    return create_app(settings.with_(networks=networks), engine=engine).test_client()


@pytest.fixture
def live(live_merchant, create_payment):
    """A live 12.34 USDC payment on LOCAL_EVM."""
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    assert p["required_confirmations"] == REQUIRED
    return p


def get(client, merchant, p) -> dict:
    r = client.get(f"{API}/payments/{p['id']}", headers=merchant.headers("live"))
    assert r.status_code == 200
    return r.get_json()["data"]


def checkout_status(client, p) -> dict:
    return client.get(f"/pay/{p['short_id']}/status").get_json()


def events(sessions, p) -> list[str]:
    with sessions() as s:
        return list(
            s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(p["id"])).order_by(Event.created_at))
        )


def recorded(sessions, p) -> list[Transfer]:
    with sessions() as s:
        return list(s.scalars(sa.select(Transfer).where(Transfer.payment_id == uuid.UUID(p["id"]))))


def test_a_zero_value_transfer_is_not_recorded_counted_or_announced(client, sessions, live_merchant, live):
    spam = tx()
    settle(sessions, report(live, SEEN, 0, 1, tx=spam), report(live, CONFIRMED, 0, REQUIRED, tx=spam))
    got = get(client, live_merchant, live)
    assert (got["status"], got["transaction_hash"], got["confirmations"]) == ("PENDING", None, 0)
    assert events(sessions, live) == ["payment.created"] and recorded(sessions, live) == []
    assert checkout_status(client, live)["seen"] is False
    cancel = client.post(f"{API}/payments/{live['id']}/cancel", headers=live_merchant.headers("live"))
    assert cancel.status_code == 200 and cancel.get_json()["data"]["status"] == "CANCELED"


def test_a_seen_report_after_the_confirmed_one_changes_nothing(client, sessions, live_merchant, live):
    part = tx()
    settle(sessions, report(live, CONFIRMED, 4_000_000, REQUIRED, tx=part))
    assert get(client, live_merchant, live)["confirmations"] == REQUIRED
    settle(sessions, report(live, SEEN, 4_000_000, 3, tx=part))  # a redelivered, older report
    got = get(client, live_merchant, live)
    assert (got["status"], got["confirmations"], got["amount_received"]) == ("PARTIALLY_PAID", REQUIRED, "4")
    assert [(t.status, t.confirmations) for t in recorded(sessions, live)] == [("CONFIRMED", REQUIRED)]
    assert events(sessions, live) == ["payment.created", "payment.partially_paid"]


def test_an_older_seen_report_never_lowers_the_confirmations_shown(client, sessions, live_merchant, live):
    paid = tx()
    settle(
        sessions,
        report(live, SEEN, 12_340_000, 1, tx=paid),
        report(live, SEEN, 12_340_000, 3, tx=paid),
        report(live, SEEN, 12_340_000, 2, tx=paid),
    )
    assert get(client, live_merchant, live)["confirmations"] == 3
    assert checkout_status(client, live)["confirmations"] == 3


def test_a_seen_transfer_moved_to_another_block_shows_its_new_confirmations(client, sessions, live_merchant, live):
    paid = tx()
    settle(
        sessions,
        report(live, SEEN, 12_340_000, 3, tx=paid, block_hash="0xb1"),
        report(live, SEEN, 12_340_000, 1, tx=paid, block_hash="0xb2"),
    )  # a reorg re-mined it later
    assert get(client, live_merchant, live)["confirmations"] == 1


def test_an_orphaned_seen_transfer_clears_what_it_set(client, sessions, live_merchant, live):
    paid = tx()
    settle(sessions, report(live, SEEN, 12_340_000, 1, tx=paid))
    assert get(client, live_merchant, live)["transaction_hash"] == paid
    assert checkout_status(client, live)["seen"] is True
    settle(sessions, report(live, ORPHANED, 12_340_000, 0, tx=paid))
    got = get(client, live_merchant, live)
    assert (got["status"], got["transaction_hash"], got["confirmations"]) == ("PENDING", None, 0)
    assert checkout_status(client, live)["seen"] is False
    assert events(sessions, live) == ["payment.created", "payment.detected"]
    cancel = client.post(f"{API}/payments/{live['id']}/cancel", headers=live_merchant.headers("live"))
    assert cancel.status_code == 200  # nothing is pending any more


def test_an_orphaned_transfer_leaves_another_seen_transfer_standing(client, sessions, live_merchant, live):
    first, second = tx(), tx()
    settle(sessions, report(live, SEEN, 6_000_000, 2, tx=first), report(live, SEEN, 6_340_000, 1, tx=second))
    assert get(client, live_merchant, live)["transaction_hash"] == second
    settle(sessions, report(live, ORPHANED, 6_340_000, 0, tx=second))
    got = get(client, live_merchant, live)
    assert (got["transaction_hash"], got["confirmations"]) == (first, 2)
    assert checkout_status(client, live)["seen"] is True
    assert client.post(f"{API}/payments/{live['id']}/cancel", headers=live_merchant.headers("live")).status_code == 409


def test_an_orphaned_transfer_of_a_partly_paid_payment_shows_the_confirmed_part_again(
    client, sessions, live_merchant, live
):
    part, rest = tx(), tx()
    settle(sessions, report(live, CONFIRMED, 4_000_000, REQUIRED, tx=part), report(live, SEEN, 8_340_000, 1, tx=rest))
    assert get(client, live_merchant, live)["transaction_hash"] == rest
    settle(sessions, report(live, ORPHANED, 8_340_000, 0, tx=rest))
    got = get(client, live_merchant, live)
    assert (got["status"], got["transaction_hash"], got["confirmations"]) == ("PARTIALLY_PAID", part, REQUIRED)


def test_a_transfer_back_in_a_block_after_its_orphaning_is_detected_again(client, sessions, live_merchant, live):
    paid = tx()
    settle(
        sessions,
        report(live, SEEN, 12_340_000, 1, tx=paid, block_hash="0xb1"),
        report(live, ORPHANED, 12_340_000, 0, tx=paid, block_hash="0xb1"),
        report(live, SEEN, 12_340_000, 1, tx=paid, block_hash="0xb2"),
    )
    got = get(client, live_merchant, live)
    assert (got["transaction_hash"], got["confirmations"]) == (paid, 1)
    assert events(sessions, live) == ["payment.created", "payment.detected", "payment.detected"]
    settle(sessions, report(live, CONFIRMED, 12_340_000, REQUIRED, tx=paid, block_hash="0xb2"))
    assert get(client, live_merchant, live)["status"] == "COMPLETED"


def test_a_seen_transfer_never_counts_toward_completion(client, sessions, live_merchant, live):
    """Half the amount seen (unconfirmed), the other half confirmed: partly paid with the
    confirmed half only. The seen half may still be dropped or reorged out."""
    seen, confirmed = tx(), tx()
    settle(
        sessions, report(live, SEEN, 6_170_000, 1, tx=seen), report(live, CONFIRMED, 6_170_000, REQUIRED, tx=confirmed)
    )
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"], got["completed_at"]) == ("PARTIALLY_PAID", "6.17", None)
    assert "payment.completed" not in events(sessions, live)
    settle(sessions, report(live, CONFIRMED, 6_170_000, REQUIRED, tx=seen))  # now it confirms
    got = get(client, live_merchant, live)
    assert (got["status"], got["amount_received"]) == ("COMPLETED", "12.34")


def test_the_settlers_address_lookup_is_an_index_scan(engine, sessions, live):
    """With sequential scans priced out, a query no index can serve still plans a Seq Scan:
    so the plan below proves an index answers it, whatever the table's size."""

    def by_address(statement: str, parameters):
        if "FROM payments" in statement and "address" in statement.split("WHERE", 1)[-1]:
            return statement, parameters
        return None

    with statements(engine, by_address) as seen:
        settle(sessions, report(live, SEEN, 1, 1))
    assert seen, "the settler looked the payment up by its address"
    statement, parameters = seen[0]
    with engine.connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
        conn.rollback()
    assert "Seq Scan" not in plan and "Index Scan using payments_address_key" in plan, plan
