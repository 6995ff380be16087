"""Expiry (``payments.expire_due``, the expirer's batch) against real PostgreSQL: which
overdue payments expire, that each gets exactly one ``payment.expired`` event carrying the
whole payment object, in the transaction of the change, and that expirers side by side
neither wait for each other nor expire a payment twice."""

from __future__ import annotations

import secrets
import threading
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import ChainCursor, Event, Payment, SettledWatermark, Transfer
from kassa_common.payments import expire_due, payment_object
from kassa_common.timefmt import iso, utcnow
from kassa_expirer.jobs import Jobs
from tests.support.api import API

NETWORK = "ARBITRUM"  # live payments here: no other suite runs a watcher (or a settler's watermark) for it


def overdue(sessions, merchant_id, *, minutes_ago: float = 1, **fields) -> uuid.UUID:
    """A PENDING payment whose ``expires_at`` passed ``minutes_ago`` minutes ago."""
    pid, short = uuid.uuid4(), "X" + secrets.token_hex(4).upper()
    row = {
        "id": pid,
        "short_id": short,
        "merchant_id": merchant_id,
        "test_mode": True,
        "status": "PENDING",
        "amount": Decimal("12.34"),
        "token": "USDC",
        "network": "BASE",
        "decimals": 6,
        "address": "0x" + secrets.token_hex(20),
        "checkout_url": f"https://pay.example.com/pay/{short}",
        "crypto_amount_units": Decimal(12_340_000),
        "exchange_rate": Decimal(1),
        "required_confirmations": 10,
        "expires_at": utcnow() - timedelta(minutes=minutes_ago),
        "test_auto_complete": False,
    }
    with unit_of_work(sessions) as s:
        s.add(Payment(**{**row, **fields}))
    return pid


def add_transfer(
    sessions, pid, *, status: str, counted: bool = True, amount: int = 4_000_000, token: str = "USDC"
) -> None:
    with unit_of_work(sessions) as s:
        s.add(
            Transfer(
                payment_id=pid,
                network="BASE",
                tx_hash="0x" + secrets.token_hex(32),
                log_index=0,
                position=0,
                token=token,
                amount_units=Decimal(amount),
                status=status,
                counted=counted,
                confirmations=1,
            )
        )


def expire_all(sessions, **kw) -> int:
    total = 0
    while n := expire_batch(sessions, **kw):
        total += n
    return total


def expire_batch(sessions, **kw) -> int:
    with unit_of_work(sessions) as s:
        return expire_due(s, **kw)


def status_of(sessions, pid) -> str:
    with sessions() as s:
        return s.scalar(sa.select(Payment.status).where(Payment.id == pid))


def expired_events(sessions, pid) -> list[Event]:
    with sessions() as s:
        return list(s.scalars(sa.select(Event).where(Event.payment_id == pid, Event.type == "payment.expired")))


@pytest.fixture
def settled(sessions):
    """``NETWORK``'s settled line as the settler writes it: ``settled(at)``; removed afterwards.
    The watcher's own scan (its cursor) is set far ahead: it alone expires nothing."""
    with unit_of_work(sessions) as s:
        s.merge(
            ChainCursor(network=NETWORK, block_number=1, confirmed_through=1, scanned_at=utcnow() + timedelta(days=1))
        )

    def set_settled(at) -> None:
        with unit_of_work(sessions) as s:
            s.merge(SettledWatermark(network=NETWORK, settled_at=at))

    yield set_settled
    with unit_of_work(sessions) as s:
        s.execute(sa.delete(ChainCursor).where(ChainCursor.network == NETWORK))
        s.execute(sa.delete(SettledWatermark).where(SettledWatermark.network == NETWORK))


def test_the_expired_event_carries_the_whole_payment_object_as_the_api_shows_it(client, merchant, sessions):
    r = client.post(
        f"{API}/payments",
        headers=merchant.headers(),
        json={
            "amount": 12.34,
            "token": "USDC",
            "network": "BASE",
            "customer_name": 'Zoë \t"Tab"',
            "metadata": {"note": "back\\slash\nnew line 😀", "tab\there": 2.5, "ok": None},
        },
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    pid = uuid.UUID(r.get_json()["data"]["id"])
    with unit_of_work(sessions) as s:  # partly paid, then overdue
        s.execute(
            sa.update(Payment)
            .where(Payment.id == pid)
            .values(
                status="PARTIALLY_PAID",
                amount_received_units=4_000_000,
                test_auto_complete=False,
                expires_at=sa.func.now() - sa.text("interval '1 minute'"),
            )
        )
    add_transfer(sessions, pid, status="CONFIRMED")
    add_transfer(sessions, pid, status="SEEN", counted=False, token="USDT")  # another token: holds nothing open

    expire_all(sessions)

    shown = client.get(f"{API}/payments/{pid}", headers=merchant.headers()).get_json()["data"]
    [event] = expired_events(sessions, pid)
    assert shown["status"] == "EXPIRED" and shown["amount_received"] == "4"
    assert [t["token"] for t in shown["transfers"]] == ["USDC", "USDT"]
    assert event.payload == {
        "id": event.id,
        "event": "payment.expired",
        "timestamp": shown["updated_at"],
        "test_mode": True,
        "data": {"payment_id": str(pid), **shown},
    }
    assert (event.merchant_id, event.test_mode, event.published_at) == (merchant.id, True, None)
    assert iso(event.created_at) == shown["updated_at"]


def test_the_payload_is_the_shape_of_the_payment_after_the_change(merchant, sessions):
    pid = overdue(sessions, merchant.id, metadata_={"order": "A-17"})
    expire_all(sessions)
    with sessions() as s:
        payment = s.get(Payment, pid)
        [event] = expired_events(sessions, pid)
        assert event.payload["data"] == {"payment_id": str(pid), **payment_object(payment)}


def test_each_payment_expires_once_with_one_event(merchant, sessions):
    pids = [overdue(sessions, merchant.id) for _ in range(5)]
    expire_all(sessions)
    assert expire_all(sessions) == 0
    assert [len(expired_events(sessions, pid)) for pid in pids] == [1] * 5
    assert {status_of(sessions, pid) for pid in pids} == {"EXPIRED"}


def test_a_batch_takes_the_longest_overdue_first_up_to_its_limit(merchant, sessions):
    expire_all(sessions)  # whatever other tests left overdue
    older = [overdue(sessions, merchant.id, minutes_ago=60 + i) for i in range(3)]
    newer = overdue(sessions, merchant.id, minutes_ago=1)
    assert expire_batch(sessions, limit=3) == 3
    assert [status_of(sessions, pid) for pid in older] == ["EXPIRED"] * 3
    assert status_of(sessions, newer) == "PENDING"


def test_payments_not_yet_due_or_no_longer_open_are_left_alone(merchant, sessions):
    future = overdue(sessions, merchant.id, minutes_ago=-5)
    done = overdue(sessions, merchant.id, status="COMPLETED")
    canceled = overdue(sessions, merchant.id, status="CANCELED")
    expire_all(sessions)
    assert [status_of(sessions, p) for p in (future, done, canceled)] == ["PENDING", "COMPLETED", "CANCELED"]
    assert not any(expired_events(sessions, p) for p in (future, done, canceled))


def test_a_counted_transfer_seen_but_unconfirmed_holds_the_payment_open(merchant, sessions):
    held = overdue(sessions, merchant.id)
    add_transfer(sessions, held, status="SEEN")
    dropped = overdue(sessions, merchant.id)
    add_transfer(sessions, dropped, status="ORPHANED")
    expire_all(sessions)
    assert (status_of(sessions, held), status_of(sessions, dropped)) == ("PENDING", "EXPIRED")


def test_a_live_payment_expires_only_once_everything_reported_past_its_expiry_is_settled(merchant, sessions, settled):
    pid = overdue(sessions, merchant.id, test_mode=False, network=NETWORK, token="USDC", minutes_ago=5)
    expire_all(sessions)
    assert status_of(sessions, pid) == "PENDING"  # scanned past, but nothing settled on the network yet
    settled(utcnow() - timedelta(minutes=6))
    expire_all(sessions)
    assert status_of(sessions, pid) == "PENDING"  # settled only up to before expires_at
    settled(utcnow())
    expire_all(sessions)
    assert status_of(sessions, pid) == "EXPIRED"
    assert [e.test_mode for e in expired_events(sessions, pid)] == [False]


def test_the_event_is_written_in_the_transaction_of_the_change(merchant, sessions):
    pid = overdue(sessions, merchant.id)

    class Abort(Exception):
        pass

    with pytest.raises(Abort), unit_of_work(sessions) as s:
        assert expire_due(s) >= 1
        raise Abort
    assert status_of(sessions, pid) == "PENDING" and expired_events(sessions, pid) == []
    expire_all(sessions)
    assert status_of(sessions, pid) == "EXPIRED" and len(expired_events(sessions, pid)) == 1


def test_a_payment_the_session_holds_shows_it_expired(merchant, sessions):
    pid = overdue(sessions, merchant.id)
    with unit_of_work(sessions) as s:
        payment = s.get(Payment, pid)
        expire_due(s)
        assert payment.status == "EXPIRED"


def test_a_payment_another_transaction_holds_is_skipped_without_waiting(merchant, sessions, engine):
    locked, free = overdue(sessions, merchant.id), overdue(sessions, merchant.id)
    with engine.connect() as other:
        other.execute(sa.select(Payment.id).where(Payment.id == locked).with_for_update())
        with unit_of_work(sessions) as s:
            s.execute(sa.text("SET LOCAL lock_timeout = '2s'"))  # waiting would fail the test, not hang it
            while expire_due(s):
                pass
        other.rollback()
    assert (status_of(sessions, locked), status_of(sessions, free)) == ("PENDING", "EXPIRED")
    expire_all(sessions)
    assert status_of(sessions, locked) == "EXPIRED" and len(expired_events(sessions, locked)) == 1


def test_expirers_side_by_side_expire_every_payment_exactly_once(merchant, sessions):
    pids = [overdue(sessions, merchant.id) for _ in range(60)]
    done: list[int] = []
    start = threading.Barrier(3)

    def expirer():
        start.wait()
        done.append(expire_all(sessions, limit=7))

    threads = [threading.Thread(target=expirer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(done) == 3 and sum(done) >= len(pids)
    assert [len(expired_events(sessions, pid)) for pid in pids] == [1] * len(pids)


def test_the_expirer_job_expires_its_batches_side_by_side_each_once(merchant, sessions):
    expire_all(sessions)  # whatever other tests left overdue
    pids = [overdue(sessions, merchant.id) for _ in range(10)]
    jobs = Jobs(sessions, timedelta(hours=1), batch=3, expire_batches=2)
    assert [jobs.expire(), jobs.expire(), jobs.expire()] == [6, 4, 0]
    assert [len(expired_events(sessions, pid)) for pid in pids] == [1] * 10


def test_the_object_built_in_sql_is_the_one_python_builds_for_every_kind_of_field(merchant, sessions):
    """Payments without transfers have their event built by PostgreSQL: field by field the
    object ``payment_to_dict`` gives (nulls and values, odd amounts, 18 decimals, text that
    needs escaping, a product, times with and without milliseconds)."""
    pids = [
        overdue(sessions, merchant.id, metadata_={"order": "A-17"}),
        overdue(
            sessions,
            merchant.id,
            amount=Decimal("1234567.05"),
            token="ETH",
            decimals=18,
            crypto_amount_units=Decimal(123456789012345678901234567),
            amount_received_units=Decimal(1),
            exchange_rate=Decimal("2999.123456789012345678"),
            arrival_exchange_rate=Decimal("3000.500000000000000000"),
            rate_source="coingecko+kraken (median); spread 1.5%",
            rate_locked_until=utcnow() - timedelta(minutes=30, microseconds=123_999),
            currency="EUR",
            customer_email="zoë@example.com",
            customer_name='Zoë \t"Tab" \\ 😀',
            redirect_url="https://shop.example.com/done?x=1&y='2'",
            cancel_url="https://shop.example.com/cancel",
            transaction_hash="0x" + "ab" * 32,
            confirmations=3,
            metadata_={"note": "back\\slash\nnew line 😀", "tab\there": 2.5, "ok": None, "n": [1, {"a": True}]},
            settlement_address="0x" + "cd" * 20,
            sweep_tx_hash="0x" + "ef" * 32,
            swept_at=utcnow() - timedelta(seconds=5),
            completed_at=None,
        ),
        overdue(
            sessions,
            merchant.id,
            amount=Decimal("0.10"),
            crypto_amount_units=Decimal(0),
            exchange_rate=Decimal("100.000"),
            decimals=0,
            minutes_ago=0.001,
        ),
    ]
    product = uuid.uuid4()
    with unit_of_work(sessions) as s:
        s.execute(
            sa.text(
                "INSERT INTO products (id, merchant_id, test_mode, name, price, currency_type) "
                "VALUES (:id, :m, true, 'Mug', 5, 'FIAT')"
            ),
            {"id": product, "m": merchant.id},
        )
    pids.append(overdue(sessions, merchant.id, product_id=product, amount=Decimal("5.00")))
    expire_all(sessions)
    with sessions() as s:
        for pid in pids:
            [event] = expired_events(sessions, pid)
            expected = {"payment_id": str(pid), **payment_object(s.get(Payment, pid))}
            assert event.payload["data"] == expected
            assert (event.payload["id"], event.payload["event"]) == (event.id, "payment.expired")
            assert event.id.startswith("evt_") and len(event.id) == 36


def test_a_payment_paid_while_its_batch_runs_is_not_expired(merchant, sessions, engine):
    """The settler holds a payment while it completes it; the expirer's batch skips it, the
    rest of the batch expires, and once the settler commits the payment stays COMPLETED with
    no ``payment.expired``."""
    paid, others = overdue(sessions, merchant.id), [overdue(sessions, merchant.id) for _ in range(3)]
    with engine.connect() as settler:
        settler.execute(sa.select(Payment.id).where(Payment.id == paid).with_for_update())
        settler.execute(sa.update(Payment).where(Payment.id == paid).values(status="COMPLETED"))
        with unit_of_work(sessions) as s:
            s.execute(sa.text("SET LOCAL lock_timeout = '2s'"))
            while expire_due(s):
                pass
        settler.commit()
    expire_all(sessions)
    assert status_of(sessions, paid) == "COMPLETED" and expired_events(sessions, paid) == []
    assert [status_of(sessions, p) for p in others] == ["EXPIRED"] * 3
    assert [len(expired_events(sessions, p)) for p in others] == [1] * 3
