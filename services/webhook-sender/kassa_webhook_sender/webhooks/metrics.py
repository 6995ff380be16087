"""Prometheus metrics of the webhook sender (served when METRICS_PORT is set)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

ATTEMPTS = Counter("kassa_webhook_attempts_total", "Webhook delivery attempts (HTTP requests made or refused)")
SUCCEEDED = Counter("kassa_webhook_deliveries_succeeded_total", "Deliveries that got a 2xx")
FAILED = Counter("kassa_webhook_deliveries_failed_total", "Deliveries given up (schedule exhausted or endpoint gone)")
RETRIES = Counter("kassa_webhook_retries_scheduled_total", "Failed attempts with a retry scheduled")
LATENCY = Histogram(
    "kassa_webhook_attempt_seconds",
    "Duration of one delivery attempt",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
