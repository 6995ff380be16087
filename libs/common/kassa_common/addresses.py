"""Receiving addresses: the next child of the merchant's own extended public key."""
from __future__ import annotations

import uuid

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.chains.networks import Network
from kassa_common.errors import WalletNotConfigured
from kassa_common.models import Wallet

_NEXT_INDEX = sa.text(
    "INSERT INTO derivation_counters (chain, xpub, next_index) VALUES (:chain, :xpub, 1) "
    "ON CONFLICT (chain, xpub) DO UPDATE SET next_index = derivation_counters.next_index + 1 "
    "RETURNING next_index - 1"
)


def wallet_xpub(session: Session, merchant_id: uuid.UUID, test_mode: bool, chain: str) -> str:
    xpub = session.scalar(
        sa.select(Wallet.xpub).where(
            Wallet.merchant_id == merchant_id, Wallet.mode == ("test" if test_mode else "live"), Wallet.chain == chain
        )
    )
    if xpub:
        return xpub
    if test_mode:
        return TEST_XPUBS[chain]  # published test key: test payments never touch a chain
    raise WalletNotConfigured(
        f"no {chain} wallet is configured for live mode: set an extended public key first "
        f"(dashboard wallet settings, or `kassa wallet set --chain {chain}`)"
    )


def next_address(session: Session, merchant_id: uuid.UUID, test_mode: bool, network: Network) -> tuple[str, int]:
    """Take the next derivation index of the wallet (atomic, each index handed out once)."""
    xpub = wallet_xpub(session, merchant_id, test_mode, network.kind)
    index = session.execute(_NEXT_INDEX, {"chain": network.kind, "xpub": xpub}).scalar_one()
    return derive_address(network.kind, xpub, index, bech32_hrp=network.bech32_hrp), index
