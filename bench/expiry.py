"""Expiring 100k overdue payments through the expirer's job (each with its payment.expired
event, the whole payment object) against one bare UPDATE of as many rows. The job runs as
the expirer does: batches of ``Jobs.batch``, ``Jobs.expire_batches`` of them side by side."""

from __future__ import annotations

import gc
import time
from datetime import timedelta

import sqlalchemy as sa

from bench.common import Bench, Result
from bench.fill import fill


def run(b: Bench) -> list[Result]:
    from kassa_expirer.jobs import Jobs
    from kassa_expirer.main import settle_heap

    n = 1_000 if b.smoke else 100_000
    with b.engine(2) as (engine, sessions):
        fill(engine, b.merchant_id, n, tag="R", base=10**12, network="BASE", test_mode=True, expires_in_minutes=-1)
        t = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE payments SET status = 'EXPIRED', updated_at = now() "
                    "WHERE short_id LIKE 'R%' AND status = 'PENDING'"
                )
            )
        reference = time.perf_counter() - t

        fill(engine, b.merchant_id, n, tag="E", base=2 * 10**12, network="BASE", test_mode=True, expires_in_minutes=-1)
        jobs = Jobs(sessions, timedelta(hours=1))
        settle_heap()  # as the expirer's main does once started
        try:
            t = time.perf_counter()
            total = 0
            while done := jobs.expire():
                total += done
            measured = time.perf_counter() - t
        finally:
            gc.unfreeze()
        with engine.begin() as conn:  # leave the table as the other scenarios expect it
            conn.execute(sa.text("DELETE FROM events WHERE type = 'payment.expired'"))
            conn.execute(sa.text("DELETE FROM payments WHERE short_id LIKE 'R%' OR short_id LIKE 'E%'"))
    if total != n:
        raise RuntimeError(f"the expirer expired {total} of {n} overdue payments")
    return [
        Result(
            "expire_100k",
            f"expire {n:,} overdue payments",
            "s",
            measured,
            "< 10 s",
            measured < 10,
            reference,
            "one bare UPDATE",
            measured / reference,
            extra={"batch": jobs.batch, "batches_side_by_side": jobs.expire_batches},
        )
    ]
