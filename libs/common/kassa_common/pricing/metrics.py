"""Per-source metrics of the rate service (Prometheus)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ANSWERS = Counter("kassa_rate_source_answers_total", "Answers a rate source gave", ["source"])
ERRORS = Counter("kassa_rate_source_errors_total", "Requests to a rate source that failed or timed out", ["source"])
DEVIATION = Gauge(
    "kassa_rate_source_deviation_pct", "A source's latest distance from the median, percent", ["source", "symbol"]
)
EXCLUDED = Counter("kassa_rate_source_excluded_total", "Answers left out for not agreeing with the others", ["source"])
UNAVAILABLE = Counter("kassa_rate_unavailable_total", "Rates refused: too few sources answered or agreed")
STALE = Counter("kassa_rate_stale_served_total", "Rates served stale (a refresh failed or is under way)")
STABLECOIN = Gauge("kassa_stablecoin_price_usd", "A stablecoin's market price in USD", ["symbol"])
