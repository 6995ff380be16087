"""Receiving addresses: the next child of the merchant's own extended public key.

Child indexes come from one PostgreSQL sequence per (chain, extended key): ``nextval``
hands each index out once, takes no row lock and never waits for other transactions, so
concurrent payments neither share an address nor queue behind each other's commits. An
index is skipped only when the transaction that took it rolls back.
"""
from __future__ import annotations

import hashlib
import threading
import uuid

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.chains.networks import Network
from kassa_common.errors import WalletNotConfigured
from kassa_common.models import Wallet

_known: set[str] = set()
_lock = threading.Lock()


def sequence_name(chain: str, xpub: str) -> str:
    return "kassa_idx_" + hashlib.sha256(f"{chain}:{xpub}".encode()).hexdigest()[:32]


def _ensure_sequence(session: Session, name: str) -> None:
    """Create the key's sequence once (outside the caller's transaction, so it survives it)."""
    if name in _known:
        return
    with _lock:
        if name in _known:
            return
        with session.get_bind().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            try:
                conn.exec_driver_sql(f"CREATE SEQUENCE IF NOT EXISTS {name} MINVALUE 0 START WITH 0")
            except DBAPIError as exc:  # a concurrent creator won the race: the sequence exists
                if "already exists" not in str(exc.orig) and "duplicate key" not in str(exc.orig):
                    raise
        _known.add(name)


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
    """The next unused address of the merchant's wallet for this network's chain."""
    xpub = wallet_xpub(session, merchant_id, test_mode, network.kind)
    name = sequence_name(network.kind, xpub)
    _ensure_sequence(session, name)
    index = session.execute(sa.text(f"SELECT nextval('{name}')")).scalar_one()
    return derive_address(network.kind, xpub, index, bech32_hrp=network.bech32_hrp), index
