"""What a market rate source is: a name, and USD prices for the symbols it is asked.

A source answers ``prices({"ETH", "EUR"})`` with ``{"ETH": Decimal("3012.55"), "EUR":
Decimal("1.08")}``: the USD price of one unit of each symbol, coins and fiat currencies
alike (crosses such as ETH in EUR are made from these, through USD). A symbol it does not
price is left out; a source that cannot answer (unreachable, an HTTP error, a reply it
cannot read) raises ``SourceDown``. Every request has a timeout and follows no redirect.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

import requests


class SourceDown(Exception):
    """The source gave no usable answer (the message says why, never the URL's secrets)."""


class Source(Protocol):
    name: str

    def prices(self, symbols: set[str]) -> dict[str, Decimal]: ...


class HttpSource:
    """Shared plumbing of the HTTP sources: one session, a timeout, JSON with exact decimals."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 3.0,
        session: requests.Session | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()
        self.headers = {"Accept": "application/json", **(headers or {})}

    def get_json(self, path: str, params: dict[str, str] | None = None, *, ok: tuple[int, ...] = (200,)) -> Any:
        try:
            resp = self.session.get(
                f"{self.base_url}{path}",
                params=params,
                timeout=self.timeout,
                allow_redirects=False,
                headers=self.headers,
            )
        except requests.RequestException as exc:
            raise SourceDown(f"{self.name}: {exc.__class__.__name__}") from None
        if resp.status_code not in ok:
            raise SourceDown(f"{self.name}: HTTP {resp.status_code}")
        try:
            return json.loads(resp.content, parse_float=Decimal, parse_int=Decimal), resp.status_code
        except ValueError:
            raise SourceDown(f"{self.name}: the reply is not JSON") from None


def positive(value: Any, what: str) -> Decimal:
    """A price from a reply: a positive finite decimal, or SourceDown."""
    try:
        price = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise SourceDown(f"{what}: {value!r} is not a number") from None
    if not price.is_finite() or price <= 0:
        raise SourceDown(f"{what}: not a positive price")
    return price
