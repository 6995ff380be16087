"""The enabled networks and their tokens (``GET /networks``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kassa_client.models.base import KassaObject


@dataclass(frozen=True, kw_only=True)
class Token(KassaObject):
    symbol: str
    contract: str | None = None
    decimals: int
    native: bool


@dataclass(frozen=True, kw_only=True)
class Network(KassaObject):
    name: str
    display_name: str | None = None
    kind: str
    chain_id: int | None = None
    required_confirmations: int
    live_enabled: bool | None = None
    tokens: list[Token] = field(default_factory=list)

    def token(self, symbol: str) -> Token | None:
        """The token with this symbol (any case), or None."""
        wanted = symbol.upper()
        return next((t for t in self.tokens if t.symbol.upper() == wanted), None)
