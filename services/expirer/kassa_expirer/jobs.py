"""The expirer's jobs, one unit of work each; every job is safe with several expirers."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from prometheus_client import Counter
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.bus.publisher import PublishFailed, Publisher
from kassa_common import retention
from kassa_common.db import unit_of_work
from kassa_common.outbox import relay_once
from kassa_common.payments import complete_due_test_payments, expire_due

log = logging.getLogger("kassa.expirer")
EXPIRED = Counter("kassa_expirer_expired_total", "Payments moved to EXPIRED")
SIMULATED = Counter("kassa_expirer_test_completions_total", "Test-mode payments paid by simulation")
REPUBLISHED = Counter("kassa_expirer_republished_total", "Outbox rows the relay had left behind")


@dataclass
class Jobs:
    sessions: sessionmaker[Session]
    publisher: Publisher | None
    test_complete_after: timedelta
    stale_after: timedelta = timedelta(seconds=30)
    batch: int = 1000
    idempotency_ttl: timedelta = timedelta(hours=24)

    def expire(self) -> int:
        with unit_of_work(self.sessions) as session:
            n = expire_due(session, limit=self.batch)
        EXPIRED.inc(n)
        return n

    def complete_test_payments(self) -> int:
        with unit_of_work(self.sessions) as session:
            n = complete_due_test_payments(session, self.test_complete_after, limit=self.batch)
        SIMULATED.inc(n)
        return n

    def republish_stale(self) -> int:
        if self.publisher is None:
            return 0
        try:
            n = relay_once(self.sessions, self.publisher, older_than=self.stale_after)
        except PublishFailed as exc:
            log.warning("cannot republish stale outbox rows: %s", exc)
            return 0
        REPUBLISHED.inc(n)
        return n

    def purge(self) -> int:
        """Rows past their retention window (``kassa_common.retention``)."""
        return sum(retention.purge(self.sessions, self.idempotency_ttl).values())

    def tick(self) -> bool:
        """One round of every job; True if any had work (run again at once)."""
        done = self.expire() + self.complete_test_payments() + self.republish_stale()
        return done > 0
