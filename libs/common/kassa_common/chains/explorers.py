"""Public block explorers: where a person can look a transaction up (the claim page links a
refund's payout there). Development networks have none."""

from __future__ import annotations

from urllib.parse import quote

TRANSACTION_URLS = {
    "ETHEREUM": "https://etherscan.io/tx/{tx}",
    "BASE": "https://basescan.org/tx/{tx}",
    "POLYGON": "https://polygonscan.com/tx/{tx}",
    "ARBITRUM": "https://arbiscan.io/tx/{tx}",
    "OPTIMISM": "https://optimistic.etherscan.io/tx/{tx}",
    "BSC": "https://bscscan.com/tx/{tx}",
    "BITCOIN": "https://mempool.space/tx/{tx}",
}


def transaction_url(network: str, tx_hash: str | None) -> str | None:
    """The explorer page of ``tx_hash`` on ``network`` (None: no explorer, or no hash)."""
    template = TRANSACTION_URLS.get(network.upper())
    if template is None or not tx_hash:
        return None
    return template.format(tx=quote(tx_hash, safe=""))
