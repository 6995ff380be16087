"""``RATES_URL``: one more source, for an operator's own price feed (kept from when it was
the only HTTP source).

``RATES_URL=https://prices.example/{symbol}-USD`` is asked once per symbol (``{symbol}``
replaced) for its USD price, read at the dotted ``RATES_JSON_PATH`` of the JSON reply
(default ``data.amount``, Coinbase's spot-price shape). It joins the sources of
``RATES_PROVIDERS`` under the name ``url``, and its answers are combined like theirs. A 404
means it does not price that symbol.
"""

from __future__ import annotations

from decimal import Decimal

from kassa_common.pricing.source import HttpSource, SourceDown, positive


class UrlTemplate(HttpSource):
    name = "url"

    def __init__(self, url_template: str, *, path: str = "data.amount", **kwargs) -> None:
        if "{symbol}" not in url_template:
            raise ValueError("the rate URL needs a {symbol} placeholder")
        super().__init__("", **kwargs)
        self.url_template, self.path = url_template, path

    def prices(self, symbols: set[str]) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for symbol in sorted(symbols):
            body, status = self.get_json(self.url_template.format(symbol=symbol), ok=(200, 404))
            if status == 404:
                continue
            value = body
            try:
                for part in self.path.split("."):
                    value = value[part]
            except (KeyError, TypeError, IndexError):
                raise SourceDown(f"url: no number at {self.path}") from None
            out[symbol] = positive(value, f"url {symbol}")
        return out
