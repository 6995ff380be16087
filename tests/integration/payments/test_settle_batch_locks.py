"""A settler batch reads what it settles up front: ``lock_for_reports`` locks the batch's
payments (with their merchants' tolerance) in one statement and their transfers in one
more, and settling the batch's reports asks the database for neither again, however many
reports it holds, new transfers or known ones, and reports to no payment. The merchant's
underpayment tolerance, read that way or one report at a time, is the one the payment
completes with."""

from __future__ import annotations

import re
from contextlib import contextmanager
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common import payments
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant
from kassa_common.payments.settle import lock_for_reports
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.transfers import report, tx_hash

SEEN, CONFIRMED = TransferStatus.SEEN, TransferStatus.CONFIRMED
DUE = 12_340_000  # LIVE_PAYMENT's 12.34 USDC


@contextmanager
def reads(engine):
    """The tables the SELECT statements run meanwhile read first, ``+lock`` when FOR UPDATE."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT"):
            table = re.search(r"FROM (\w+)", statement).group(1)
            seen.append(table + ("+lock" if "FOR UPDATE" in statement.upper() else ""))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def settle_batch(sessions, reports) -> None:
    with unit_of_work(sessions) as s:
        lock_for_reports(s, reports)
        for r in reports:
            payments.settle(s, r)


def settle_each(sessions, reports) -> None:
    for r in reports:
        with unit_of_work(sessions) as s:
            payments.settle(s, r)


def test_a_batch_locks_its_payments_and_transfers_once_then_settles_from_what_it_holds(
    engine, sessions, live_merchant, create_payment, client
):
    ps = [create_payment(live_merchant, LIVE_PAYMENT, mode="live") for _ in range(4)]
    txs = [tx_hash() for _ in ps]
    # an address no payment has: a claimed refund's, maybe (one look at the refunds waiting there)
    stranger = dict(ps[0], address="0x" + "ab" * 20)
    first = [report(p, SEEN, DUE, 1, tx=t) for p, t in zip(ps, txs, strict=True)] + [report(stranger, SEEN, DUE, 1)]
    with reads(engine) as read:
        settle_batch(sessions, first)
    assert read == ["payments+lock", "transfers+lock", "refunds+lock"]

    again = [report(p, CONFIRMED, DUE, 2, tx=t) for p, t in zip(ps, txs, strict=True)] + [
        report(stranger, CONFIRMED, DUE, 2)
    ]
    with reads(engine) as read:
        settle_batch(sessions, again)
    assert read == ["payments+lock", "transfers+lock", "refunds+lock"]  # the known transfers, their totals: all held

    for p, t in zip(ps, txs, strict=True):
        got = client.get(f"{API}/payments/{p['id']}", headers=live_merchant.headers("live")).get_json()["data"]
        assert (got["status"], got["transaction_hash"]) == ("COMPLETED", t)


@pytest.mark.parametrize("how", [settle_batch, settle_each], ids=["in one batch", "each alone"])
def test_a_slightly_short_payment_completes_within_the_merchants_tolerance(
    sessions, live_merchant, create_payment, client, how
):
    with unit_of_work(sessions) as s:
        s.get(Merchant, live_merchant.id).underpayment_tolerance = Decimal("0.01")  # 1 %
    short, shorter = (create_payment(live_merchant, LIVE_PAYMENT, mode="live") for _ in range(2))
    how(
        sessions,
        [
            report(short, CONFIRMED, DUE * 995 // 1000, 2),  # 0.5 % short: complete
            report(shorter, CONFIRMED, DUE * 98 // 100, 2),
        ],
    )  # 2 % short: partial
    statuses = [
        client.get(f"{API}/payments/{p['id']}", headers=live_merchant.headers("live")).get_json()["data"]["status"]
        for p in (short, shorter)
    ]
    assert statuses == ["COMPLETED", "PARTIALLY_PAID"]
