"""A settler batch reads what it settles up front: ``lock_for_reports`` locks the batch's
payments (with their merchants' tolerance) in one statement and their transfers in one
more, and settling the batch's reports asks the database for neither again, however many
reports it holds, new transfers or known ones, and reports to no payment. The merchant's
underpayment tolerance, read that way or one report at a time, is the one the payment
completes with."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal

import pytest

from kassa_common import payments
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant
from kassa_common.statuses import TransferStatus
from tests.support.api import API, LIVE_PAYMENT
from tests.support.statements import statements
from tests.support.transfers import report, settle_batch, tx_hash

SEEN, CONFIRMED = TransferStatus.SEEN, TransferStatus.CONFIRMED
DUE = 12_340_000  # LIVE_PAYMENT's 12.34 USDC


def read(statement: str, _parameters) -> str | None:
    """The table a SELECT reads first, ``+lock`` when FOR UPDATE."""
    if not statement.lstrip().upper().startswith("SELECT"):
        return None
    table = re.search(r"FROM (\w+)", statement).group(1)
    return table + ("+lock" if "FOR UPDATE" in statement.upper() else "")


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
    with statements(engine, read) as reads:
        settle_batch(sessions, first)
    assert reads == ["payments+lock", "transfers+lock", "refunds+lock"]

    again = [report(p, CONFIRMED, DUE, 2, tx=t) for p, t in zip(ps, txs, strict=True)] + [
        report(stranger, CONFIRMED, DUE, 2)
    ]
    with statements(engine, read) as reads:
        settle_batch(sessions, again)
    assert reads == ["payments+lock", "transfers+lock", "refunds+lock"]  # the known transfers, their totals: all held

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


def test_a_batch_writes_each_row_only_its_own_changes_as_one_report_at_a_time_would(
    sessions, live_merchant, create_payment, client
):
    """One batch whose payments change different columns (a detection, a completion, a
    detection taken back to nothing, a transfer on another network recorded as JSON) ends
    with every payment and transfer as settling the same reports one by one does (the
    batch writes its changes in one UPDATE per table, each row flagged with its own)."""

    def scenario() -> tuple[list[dict], list]:
        ps = [create_payment(live_merchant, LIVE_PAYMENT, mode="live") for _ in range(4)]
        detected, completed, released, elsewhere = ps
        dropped = tx_hash()
        return ps, [
            report(detected, SEEN, DUE, 1),
            report(completed, CONFIRMED, DUE, 2),
            report(released, SEEN, DUE, 1, tx=dropped),
            report(released, TransferStatus.ORPHANED, DUE, 0, tx=dropped),
            dataclasses.replace(report(elsewhere, CONFIRMED, DUE // 2, 2), network="LOCAL_EVM_2"),
        ]

    def shown(p: dict) -> dict:
        got = client.get(f"{API}/payments/{p['id']}", headers=live_merchant.headers("live")).get_json()["data"]
        return {
            "status": got["status"],
            "amount_received": got["amount_received"],
            "confirmations": got["confirmations"],
            "detected": got["transaction_hash"] is not None,
            "completed": got["completed_at"] is not None,
            "wrong_network": [(w["network"], w["amount"], w["recovery"]) for w in got["wrong_network"]],
            "transfers": [(t["status"], t["confirmations"], t["counted"]) for t in got.get("transfers", [])],
        }

    batched, batch = scenario()
    settle_batch(sessions, batch)
    alone, reports = scenario()
    settle_each(sessions, reports)
    assert [shown(p) for p in batched] == [shown(p) for p in alone]
    assert [(shown(p)["status"], shown(p)["detected"], shown(p)["confirmations"]) for p in batched] == [
        ("PENDING", True, 1),
        ("COMPLETED", True, 2),
        ("PENDING", False, 0),
        ("PENDING", False, 0),
    ]
    assert shown(batched[3])["wrong_network"] == [("LOCAL_EVM_2", "6.17", "wallet")]
