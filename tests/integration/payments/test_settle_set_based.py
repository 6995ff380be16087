"""A settler batch writes set-based: whatever its reports change is written just before its
commit with one statement per table (one INSERT of the new transfers, one UPDATE of the
transfers and one of the payments that changed, one COPY of the events), however many
reports it holds. Every guarantee holds as it does one report at a time: a transfer reported
twice in the batch is recorded once and counted once, each transition writes exactly one
event, and a batch delivered again changes nothing."""

from __future__ import annotations

import re
from collections import Counter

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Event, Transfer
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.statements import statements
from tests.support.transfers import report, settle_batch, tx_hash

SEEN, CONFIRMED = TransferStatus.SEEN, TransferStatus.CONFIRMED
DUE = 12_340_000  # LIVE_PAYMENT's 12.34 USDC


def write(statement: str, _parameters) -> str | None:
    """A statement that writes, as ``VERB table``."""
    m = re.match(r"\s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)", statement, re.IGNORECASE)
    return f"{m.group(1).split()[0].upper()} {m.group(2)}" if m else None


def events_of(sessions, ids) -> Counter:
    with unit_of_work(sessions) as s:
        rows = s.execute(
            sa.select(Event.payment_id, Event.type).where(Event.payment_id.in_(ids), Event.type != "payment.created")
        ).all()
    return Counter((str(pid), kind) for pid, kind in rows)


def transfers_of(sessions, ids) -> list:
    with unit_of_work(sessions) as s:
        return s.execute(
            sa.select(Transfer.payment_id, Transfer.tx_hash, Transfer.status, Transfer.position).where(
                Transfer.payment_id.in_(ids)
            )
        ).all()


def test_a_batch_with_duplicates_and_one_transaction_paying_two_payments_writes_once_per_table(
    engine, sessions, live_merchant, create_payment, client
):
    ps = [create_payment(live_merchant, LIVE_PAYMENT, mode="live") for _ in range(4)]
    ids = [p["id"] for p in ps]
    shared = tx_hash()  # one transaction paying the first two payments (a batch payout): two logs
    own = [tx_hash(), tx_hash()]
    first = [
        report(ps[0], SEEN, DUE, 1, tx=shared, log_index=3),
        report(ps[1], SEEN, DUE, 1, tx=shared, log_index=4),
        report(ps[2], SEEN, DUE, 1, tx=own[0]),
        report(ps[2], SEEN, DUE, 1, tx=own[0]),  # the same report twice in the batch
        report(ps[3], SEEN, DUE // 2, 1, tx=own[1]),
    ]
    with statements(engine, write) as written:
        settle_batch(sessions, first)
    assert Counter(written) == {"INSERT transfers": 1, "UPDATE payments": 1}  # no event yet (DETECT has one: COPY)
    assert events_of(sessions, ids) == {(i, "payment.detected"): 1 for i in ids}

    second = [
        report(ps[0], CONFIRMED, DUE, 2, tx=shared, log_index=3),
        report(ps[0], CONFIRMED, DUE, 2, tx=shared, log_index=3),  # twice: counted once
        report(ps[1], CONFIRMED, DUE, 2, tx=shared, log_index=4),
        report(ps[2], CONFIRMED, DUE, 2, tx=own[0]),
        report(ps[3], CONFIRMED, DUE // 2, 2, tx=own[1]),
        report(ps[3], CONFIRMED, DUE // 2, 2, tx=tx_hash()),  # a second, new transfer completing it
    ]
    with statements(engine, write) as written:
        settle_batch(sessions, second)
    assert Counter(written) == {"INSERT transfers": 1, "UPDATE transfers": 1, "UPDATE payments": 1}

    with statements(engine, write) as written:
        settle_batch(sessions, second)  # the batch delivered again: nothing changes
    assert written == []

    got = {i: client.get(f"{API}/payments/{i}", headers=live_merchant.headers("live")).get_json()["data"] for i in ids}
    assert {i: (g["status"], g["amount_received"]) for i, g in got.items()} == {i: ("COMPLETED", "12.34") for i in ids}
    assert (got[ids[0]]["transaction_hash"], got[ids[1]]["transaction_hash"]) == (shared, shared)
    assert events_of(sessions, ids) == {
        **{(i, "payment.detected"): 1 for i in ids},
        **{(i, "payment.completed"): 1 for i in ids},
        (ids[3], "payment.partially_paid"): 1,  # its first half, then the second
    }
    rows = transfers_of(sessions, ids)
    assert len(rows) == 5 and all(status == CONFIRMED for _, _, status, _ in rows)
    assert sorted((str(pid), tx, pos) for pid, tx, _, pos in rows if tx == shared) == sorted(
        [(ids[0], shared, 3), (ids[1], shared, 4)]
    )
