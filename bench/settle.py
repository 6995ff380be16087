"""Settling transfer reports as the settler runs them (batches of ``settler.BATCH`` in one
transaction each, their payments and transfers locked up front by ``lock_for_reports``, then
``payments.settle`` for each) with 1M payments in the table against the same with 10k."""

from __future__ import annotations

import secrets
import time

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Payment
from kassa_common.payments import settle
from kassa_common.payments.settle import lock_for_reports
from kassa_common.statuses import TransferStatus
from bench.common import Bench, Result
from bench.fill import address, fill
from kassa_settler.main import BATCH

BASE = 3 * 10**12


def settle_rate(sessions, addresses: list[str]) -> float:
    """Transfers/s: each address gets one confirmed transfer of its full amount (completes it)."""
    reports = [
        TransferReport(
            TransferStatus.CONFIRMED,
            "LOCAL_EVM",
            "0x" + secrets.token_hex(32),
            0,
            "USDC",
            a,
            10_000_000,
            100,
            "0x" + secrets.token_hex(32),
            2,
        )
        for a in addresses
    ]
    t = time.perf_counter()
    for i in range(0, len(reports), BATCH):
        batch = reports[i : i + BATCH]
        with unit_of_work(sessions) as s:
            lock_for_reports(s, batch)
            for r in batch:
                settle(s, r)
    rate = len(reports) / (time.perf_counter() - t)
    with sessions() as s:
        done = s.scalar(sa.select(sa.func.count()).where(Payment.address.in_(addresses), Payment.status == "COMPLETED"))
    assert done == len(addresses), f"{len(addresses) - (done or 0)} of {len(addresses)} payments did not complete"
    return rate


def run(b: Bench) -> list[Result]:
    # k: ~2 s a side at ~1,400 transfers/s. The warm-up, reference and measured addresses start
    # at 2, 3 and 4, each stepping by a multiple of the small table's step: none is settled twice
    small, large, k = (2_000, 20_000, 50) if b.smoke else (10_000, 1_000_000, 3_000)
    with b.engine(2) as (engine, sessions):
        fill(engine, b.merchant_id, small, tag="S", base=BASE)
        step = small // k
        settle_rate(sessions, [address(BASE, i) for i in range(2, small, step)][:k])  # warm up
        reference = settle_rate(sessions, [address(BASE, i) for i in range(3, small, step)][:k])
        fill(engine, b.merchant_id, large - small, tag="L", base=BASE + small)
        step = large // k
        measured = settle_rate(sessions, [address(BASE, i) for i in range(4, large, step)][:k])
    ratio = measured / reference
    return [
        Result(
            "settle_1m",
            f"settle a transfer, {large:,} payments in the table",
            "transfers/s",
            measured,
            "≥ 0.8×",
            ratio >= 0.8,
            reference,
            f"same with {small:,}",
            ratio,
        )
    ]
