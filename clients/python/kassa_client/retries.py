"""When to retry a request and how long to wait first: pure functions, no I/O.

- 429 (rate limited) and 503 (unavailable) are retried for every request: the API
  refused the request before doing anything, or failed without committing.
- 502 and 504 (a proxy in front of the API) and answers that never came are retried only
  when repeating the request is harmless: a GET, or a create carrying an Idempotency-Key
  (the API answers a repeat with the first response). A connection that could not even be
  opened never carried the request, so that is retried for every request.
- Nothing else is retried: a 4xx will not change by being sent again, and a 500 is a bug.

The wait doubles from ``BASE_DELAY`` up to ``MAX_DELAY`` with jitter (half the delay,
plus a random share of the other half), so many clients refused at once do not come back
at once; a ``Retry-After`` from the API is a floor. A ``Retry-After`` longer than
``MAX_RETRY_AFTER`` is not waited for: the error is raised, with ``retry_after`` on it.
"""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

BASE_DELAY = 0.5  # seconds before the first retry (before jitter)
MAX_DELAY = 8.0  # the longest backoff (before a Retry-After floor)
MAX_RETRY_AFTER = 60.0  # a longer Retry-After is the caller's decision, not the client's

ALWAYS_RETRIED = frozenset({429, 503})
RETRIED_WHEN_SAFE = frozenset({502, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def backoff(attempt: int, rand: float, *, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0):
    ``d = min(cap, base * 2**attempt)``, then a value in ``[d/2, d]`` picked by ``rand``
    (a number in ``[0, 1)``)."""
    delay = min(cap, base * 2.0 ** min(max(attempt, 0), 32))
    return delay / 2 + delay / 2 * min(max(rand, 0.0), 1.0)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date; None when
    absent or unreadable. Never negative."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def safe_to_repeat(method: str, has_idempotency_key: bool) -> bool:
    """Whether sending this request twice does what sending it once does."""
    return method.upper() in SAFE_METHODS or has_idempotency_key


def status_retryable(status: int, method: str, has_idempotency_key: bool) -> bool:
    """Whether an answer with this status is worth retrying."""
    if status in ALWAYS_RETRIED:
        return True
    return status in RETRIED_WHEN_SAFE and safe_to_repeat(method, has_idempotency_key)


def connection_error_retryable(request_sent: bool, method: str, has_idempotency_key: bool) -> bool:
    """Whether a request that got no answer is worth retrying: always when it never left
    (the connection could not be opened); otherwise only when repeating it is harmless."""
    return not request_sent or safe_to_repeat(method, has_idempotency_key)


def retry_delay(
    attempt: int, retry_after: float | None, rand: float, max_retry_after: float = MAX_RETRY_AFTER
) -> float | None:
    """Seconds to wait before the next attempt, or None when the API asked for a wait
    longer than ``max_retry_after`` (then the error is raised instead)."""
    if retry_after is not None and retry_after > max_retry_after:
        return None
    return max(backoff(attempt, rand), retry_after or 0.0)
