"""Coinbase's public exchange rates (no key): ``GET {RATES_COINBASE_URL}/v2/exchange-rates?currency=ETH``.

The reply gives, for one base currency (a coin or a fiat currency), how much of every other
currency one unit of it buys, as decimal strings::

    {"data": {"currency": "ETH", "rates": {"USD": "3012.55", "EUR": "2790.10", ...}}}

so ``rates.USD`` is the USD price of one unit of the base. An unknown currency is a 400
(``{"errors": [{"id": "invalid_request", ...}]}``): that symbol is not priced here.
"""

from __future__ import annotations

from decimal import Decimal

from kassa_common.pricing.source import HttpSource, SourceDown, positive

DEFAULT_URL = "https://api.coinbase.com"


class Coinbase(HttpSource):
    name = "coinbase"

    def prices(self, symbols: set[str]) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for symbol in sorted(symbols):
            body, status = self.get_json("/v2/exchange-rates", {"currency": symbol}, ok=(200, 400, 404))
            if status != 200:
                continue  # Coinbase does not know this currency
            try:
                data = body["data"]
                if str(data["currency"]).upper() != symbol:
                    raise SourceDown(f"coinbase: asked for {symbol}, answered {data['currency']}")
                usd = data["rates"].get("USD")
            except (KeyError, TypeError, AttributeError):
                raise SourceDown("coinbase: unexpected reply") from None
            if usd is not None:
                out[symbol] = positive(usd, f"coinbase {symbol}/USD")
        return out
