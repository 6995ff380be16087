"""Prometheus metrics of the sweeper (served when METRICS_PORT is set)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

HELD = Counter(
    "kassa_sweeper_deposits_held_total", "Deposits taken out of the batches and held for the operator", ["network"]
)
CAPPED = Gauge(
    "kassa_sweeper_capped", "1 while the sweeper key's spending cap for the hour keeps sweeps waiting", ["network"]
)
SPENT = Gauge(
    "kassa_sweeper_spent_last_hour_units",
    "What the sweeper key spent in the last hour (native coin base units; in flight: the most it may)",
    ["network"],
)
