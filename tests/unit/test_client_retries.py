"""kassa-client's retry rules (pure): what is retried, and how long it waits first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from kassa_client import retries


@pytest.mark.parametrize(
    "attempt, low, high",
    [(0, 0.25, 0.5), (1, 0.5, 1.0), (2, 1.0, 2.0), (3, 2.0, 4.0), (4, 4.0, 8.0), (5, 4.0, 8.0), (30, 4.0, 8.0)],
)
def test_backoff_doubles_up_to_the_cap_with_jitter_in_its_upper_half(attempt, low, high):
    assert retries.backoff(attempt, 0.0) == low
    assert retries.backoff(attempt, 0.999999) == pytest.approx(high, rel=1e-5)
    assert low < retries.backoff(attempt, 0.5) < high


def test_jitter_spreads_clients_refused_at_once():
    delays = {retries.backoff(2, r / 10) for r in range(10)}
    assert len(delays) == 10


@pytest.mark.parametrize(
    "header, seconds",
    [("1", 1.0), ("0", 0.0), (" 30 ", 30.0), ("2.5", 2.5), ("-3", 0.0), (None, None), ("", None), ("soon", None)],
)
def test_retry_after_in_seconds(header, seconds):
    assert retries.parse_retry_after(header) == seconds


def test_retry_after_as_an_http_date():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=42), usegmt=True)
    assert retries.parse_retry_after(header, now=now.timestamp()) == 42.0
    past = format_datetime(now - timedelta(seconds=42), usegmt=True)
    assert retries.parse_retry_after(past, now=now.timestamp()) == 0.0


def test_retry_after_is_a_floor_under_the_backoff():
    assert retries.retry_delay(0, 3.0, 0.0) == 3.0  # backoff would be 0.25 s
    assert retries.retry_delay(4, 1.0, 0.0) == 4.0  # backoff is longer than asked: keep it
    assert retries.retry_delay(0, None, 0.0) == 0.25


def test_a_retry_after_beyond_the_limit_is_not_waited_for():
    assert retries.retry_delay(0, retries.MAX_RETRY_AFTER, 0.0) == retries.MAX_RETRY_AFTER
    assert retries.retry_delay(0, retries.MAX_RETRY_AFTER + 1, 0.0) is None


@pytest.mark.parametrize(
    "status, method, keyed, retried",
    [
        (429, "POST", False, True),
        (503, "POST", False, True),
        (429, "GET", False, True),
        (503, "DELETE", False, True),
        (502, "GET", False, True),
        (504, "GET", False, True),
        (502, "POST", True, True),
        (502, "POST", False, False),
        (504, "PATCH", False, False),
        (500, "GET", False, False),
        (400, "GET", False, False),
        (401, "GET", False, False),
        (404, "GET", False, False),
        (409, "POST", True, False),
        (422, "POST", True, False),
        (200, "GET", False, False),
    ],
)
def test_which_answers_are_retried(status, method, keyed, retried):
    assert retries.status_retryable(status, method, keyed) is retried


@pytest.mark.parametrize(
    "sent, method, keyed, retried",
    [
        (False, "POST", False, True),  # the connection never opened: the API never saw it
        (True, "GET", False, True),
        (True, "POST", True, True),  # a create with its Idempotency-Key: a repeat is answered, not redone
        (True, "POST", False, False),  # a cancel that may have happened
        (True, "PATCH", False, False),
        (True, "DELETE", False, False),
    ],
)
def test_which_lost_answers_are_retried(sent, method, keyed, retried):
    assert retries.connection_error_retryable(sent, method, keyed) is retried
