"""Kraken's public ticker (no key): ``GET {RATES_KRAKEN_URL}/0/public/Ticker?pair=ETHUSD``.

The reply names the pair in Kraken's own spelling (``XETHZUSD``; Bitcoin is ``XBT``) and gives
the last trade as ``c = [price, lot volume]``, decimal strings::

    {"error": [], "result": {"XETHZUSD": {"a": [...], "b": [...], "c": ["3012.55000", "0.01"], ...}}}

Kraken quotes some fiat currencies the other way round (``USDJPY``: yen per dollar), which
is inverted. An unknown pair answers ``{"error": ["EQuery:Unknown asset pair"]}``: that
symbol is not priced here; any other error means Kraken cannot answer now.
"""

from __future__ import annotations

from decimal import Decimal

from kassa_common.pricing.source import HttpSource, SourceDown, positive

DEFAULT_URL = "https://api.kraken.com"
KRAKEN_NAMES = {"BTC": "XBT"}
USD_BASED = frozenset({"JPY", "CAD", "CHF"})  # Kraken lists USDJPY, USDCAD, USDCHF


class Kraken(HttpSource):
    name = "kraken"

    def prices(self, symbols: set[str]) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for symbol in sorted(symbols):
            inverted = symbol in USD_BASED
            code = KRAKEN_NAMES.get(symbol, symbol)
            body, _ = self.get_json("/0/public/Ticker", {"pair": f"USD{code}" if inverted else f"{code}USD"})
            try:
                errors, result = body.get("error") or [], body.get("result") or {}
                if any("Unknown asset pair" in str(e) for e in errors):
                    continue
                if errors or len(result) != 1:
                    raise SourceDown(f"kraken: {'; '.join(map(str, errors)) or 'unexpected reply'}")
                (ticker,) = result.values()
                last = positive(ticker["c"][0], f"kraken {symbol}")
            except (KeyError, TypeError, AttributeError, IndexError):
                raise SourceDown("kraken: unexpected reply") from None
            out[symbol] = Decimal(1) / last if inverted else last
        return out
