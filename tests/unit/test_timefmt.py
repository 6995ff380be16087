"""Timestamps as the API shows them (``timefmt.iso``): ISO 8601 in UTC, milliseconds cut
(not rounded), trailing Z, the same text ``strftime`` gave for any moment. Pure logic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kassa_common.timefmt import iso


def strftime_iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


MOMENTS = [
    datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 30, 0, 0, tzinfo=timezone(timedelta(hours=2))),  # the day before, in UTC
    datetime(1999, 7, 4, 5, 6, 7, 8000, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
    datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    datetime(9999, 12, 31, 12, 0, 0, 500, tzinfo=UTC),
]


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_moment_reads_as_strftime_wrote_it(moment):
    assert iso(moment) == strftime_iso(moment)


def test_a_moment_in_utc_with_milliseconds_cut():
    assert (
        iso(datetime(2026, 1, 1, 0, 30, 0, 999999, tzinfo=timezone(timedelta(hours=2)))) == "2025-12-31T22:30:00.999Z"
    )
    assert iso(None) is None
