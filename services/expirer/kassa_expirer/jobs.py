"""The expirer's jobs, one unit of work each; every job is safe with several expirers."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from prometheus_client import Counter
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import retention
from kassa_common.accounts import wallet_changes
from kassa_common.db import unit_of_work
from kassa_common.payments import complete_due_test_payments, expire_due
from kassa_common.refunds.transitions import expire_refunds

log = logging.getLogger("kassa.expirer")
EXPIRED = Counter("kassa_expirer_expired_total", "Payments moved to EXPIRED")
SIMULATED = Counter("kassa_expirer_test_completions_total", "Test-mode payments paid by simulation")
REFUNDS_EXPIRED = Counter("kassa_expirer_refunds_expired_total", "Refunds unclaimed after REFUND_CLAIM_DAYS, EXPIRED")


@dataclass
class Jobs:
    sessions: sessionmaker[Session]
    test_complete_after: timedelta
    batch: int = 1000
    idempotency_ttl: timedelta = timedelta(hours=24)
    audit_keep: timedelta = timedelta(days=retention.AUDIT_DAYS)
    expire_batches: int = 2

    def expire(self) -> int:
        """Up to ``expire_batches`` batches of overdue payments, side by side, each in its own
        transaction (``SKIP LOCKED`` keeps them apart, as it does several expirers): each batch
        is one statement, the work PostgreSQL's (``expire_due``), and two keep two cores busy."""
        if self.expire_batches == 1:
            n = self._expire_batch()
        else:
            with ThreadPoolExecutor(self.expire_batches, thread_name_prefix="expire") as pool:
                n = sum(pool.map(lambda _: self._expire_batch(), range(self.expire_batches)))
        EXPIRED.inc(n)
        return n

    def _expire_batch(self) -> int:
        with unit_of_work(self.sessions) as session:
            return expire_due(session, limit=self.batch)

    def complete_test_payments(self) -> int:
        with unit_of_work(self.sessions) as session:
            n = complete_due_test_payments(session, self.test_complete_after, limit=self.batch)
        SIMULATED.inc(n)
        return n

    def apply_wallet_changes(self) -> int:
        """Live wallet changes whose hold is over (``kassa_common.accounts.wallet_changes``)."""
        with unit_of_work(self.sessions) as session:
            n = wallet_changes.apply_due(session, limit=self.batch)
        if n:
            log.info("applied %d held wallet change(s)", n)
        return n

    def expire_refunds(self) -> int:
        """Refunds still unclaimed at their ``expires_at`` (``refund.expired``)."""
        with unit_of_work(self.sessions) as session:
            n = expire_refunds(session, limit=self.batch)
        REFUNDS_EXPIRED.inc(n)
        return n

    def purge(self) -> int:
        """Rows past their retention window (``kassa_common.retention``)."""
        return sum(retention.purge(self.sessions, self.idempotency_ttl, audit_keep=self.audit_keep).values())

    def tick(self) -> bool:
        """One round of every job; True if any had work (run again at once)."""
        done = self.expire() + self.complete_test_payments() + self.apply_wallet_changes() + self.expire_refunds()
        return done > 0
