"""When a failed delivery is tried again: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h,
4 h, 8 h after the failures so far, then every 12 h, until 3 days after the delivery
was created (its first attempt); a failure after that gives up (FAILED).

DESIGN §3's webhook schedule; email notifications (the notifier) retry an unreachable
SMTP server on the same one, so it lives with the outbound engine that runs both channels
(``dispatcher`` schedules each retry by it).

A manual redelivery of an old delivery therefore gets one attempt: if it fails, the
delivery is FAILED again rather than restarting the three-day schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

RETRY_DELAYS: tuple[float, ...] = (5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800)
REPEAT_EVERY: float = 12 * 3600
GIVE_UP_AFTER: float = 3 * 24 * 3600


@dataclass(frozen=True)
class RetryPolicy:
    delays: tuple[float, ...] = RETRY_DELAYS
    repeat_every: float = REPEAT_EVERY
    give_up_after: float = GIVE_UP_AFTER

    def delay_after(self, attempts: int) -> float:
        """Seconds to wait after the ``attempts``-th failed attempt (1-based)."""
        if attempts <= len(self.delays):
            return self.delays[max(attempts, 1) - 1]
        return self.repeat_every

    def next_attempt(self, attempts: int, first_at: datetime, now: datetime) -> datetime | None:
        """When to try again after ``attempts`` failures, or None to give up."""
        at = now + timedelta(seconds=self.delay_after(attempts))
        if at > first_at + timedelta(seconds=self.give_up_after):
            return None
        return at

    @classmethod
    def from_schedule(cls, delays: tuple[float, ...] | list[float]) -> RetryPolicy:
        """These delays, then the last one repeating, still giving up after three days."""
        return cls(tuple(delays), delays[-1], GIVE_UP_AFTER)

    def scaled(self, factor: float) -> RetryPolicy:
        """The same schedule, ``factor`` times as long (tests use a tiny factor)."""
        return RetryPolicy(
            tuple(d * factor for d in self.delays), self.repeat_every * factor, self.give_up_after * factor
        )


DEFAULT_POLICY = RetryPolicy()
