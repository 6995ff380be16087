"""Pricing: the merchant's currency, and the rates that turn it into token amounts.

``currencies`` (ISO 4217 codes and minor units), ``amounts`` (exact token arithmetic),
``fixed`` (the settings' fixed rates), the market sources ``coinbase``, ``kraken``,
``coingecko`` and ``custom`` (``RATES_URL``) behind ``source.Source``, ``combine`` (median,
outliers, minimum sources) and ``service`` (the one interface: ``RateService.quote``,
cache, stale limit, stablecoin peg), with per-source ``metrics``. docs/pricing.md explains
it for operators.
"""

from kassa_common.pricing.fixed import STABLECOINS, FixedRates, RateUnavailable
from kassa_common.pricing.service import LiveRatesNeeded, Quote, RatesDown, RateService, Unpriced, make_rates

__all__ = [
    "STABLECOINS",
    "FixedRates",
    "LiveRatesNeeded",
    "Quote",
    "RateService",
    "RateUnavailable",
    "RatesDown",
    "Unpriced",
    "make_rates",
]
