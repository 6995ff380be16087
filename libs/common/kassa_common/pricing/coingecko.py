"""CoinGecko's public API: coins by ``GET {RATES_COINGECKO_URL}/simple/price?ids=ethereum&vs_currencies=usd``,
fiat currencies by ``GET {RATES_COINGECKO_URL}/exchange_rates``.

``simple/price`` answers JSON numbers by coin id: ``{"ethereum": {"usd": 3012.55}}`` (a coin
it does not know is left out). ``exchange_rates`` gives every currency's value of one
bitcoin: ``{"rates": {"btc": {"value": 1, "type": "crypto", ...}, "usd": {"value": 67000.5,
"type": "fiat", ...}, "eur": {"value": 62000.1, ...}}}``, so one euro is usd/eur USD. With
``RATES_COINGECKO_API_KEY`` every request carries the key (``x-cg-demo-api-key``).
"""

from __future__ import annotations

from decimal import Decimal

from kassa_common.pricing.source import HttpSource, SourceDown, positive

DEFAULT_URL = "https://api.coingecko.com/api/v3"
COIN_IDS = {
    "BTC": "bitcoin",
    "ETH": "ethereum",
    "LTC": "litecoin",
    "POL": "polygon-ecosystem-token",
    "BNB": "binancecoin",
    "USDC": "usd-coin",
    "USDT": "tether",
}


class CoinGecko(HttpSource):
    name = "coingecko"

    def __init__(self, base_url: str, *, api_key: str | None = None, **kwargs) -> None:
        super().__init__(base_url, headers={"x-cg-demo-api-key": api_key} if api_key else None, **kwargs)

    def prices(self, symbols: set[str]) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        coins = {COIN_IDS[s]: s for s in symbols if s in COIN_IDS}
        if coins:
            body, _ = self.get_json(
                "/simple/price", {"ids": ",".join(sorted(coins)), "vs_currencies": "usd", "precision": "full"}
            )
            try:
                for coin_id, symbol in coins.items():
                    if coin_id in body and "usd" in body[coin_id]:
                        out[symbol] = positive(body[coin_id]["usd"], f"coingecko {symbol}")
            except (TypeError, AttributeError):
                raise SourceDown("coingecko: unexpected reply") from None
        fiat = {s for s in symbols if s not in COIN_IDS}
        if fiat:
            body, _ = self.get_json("/exchange_rates")
            try:
                rates = body["rates"]
                usd = positive(rates["usd"]["value"], "coingecko usd")
                for symbol in fiat:
                    entry = rates.get(symbol.lower())
                    if entry is not None and entry.get("type") == "fiat":
                        out[symbol] = usd / positive(entry["value"], f"coingecko {symbol}")
            except (KeyError, TypeError, AttributeError):
                raise SourceDown("coingecko: unexpected reply") from None
        return out
