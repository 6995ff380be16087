"""``kassa.networks``: the enabled networks and their tokens (no key needed)."""

from __future__ import annotations

from kassa_client.models.networks import Network
from kassa_client.resources.base import Resource


class Networks(Resource):
    def list(self) -> list[Network]:
        """Every enabled network with its tokens: the token/network pairs a payment may use."""
        return self._objects(Network, "GET", "/networks")

    def get(self, name: str) -> Network | None:
        """The enabled network of this name (any case), or None."""
        wanted = name.upper()
        return next((n for n in self.list() if n.name.upper() == wanted), None)
