"""Receiving addresses: the next child of the merchant's own extended public key, or, when
the merchant settles to one address (EVM forwarder mode), the payment's own deposit.

Child indexes come from one PostgreSQL sequence per (chain, extended key): ``nextval``
hands each index out once, takes no row lock and never waits for other transactions, so
concurrent payments neither share an address nor queue behind each other's commits. An
index is skipped only when the transaction that took it rolls back.

A forwarder deposit needs no sequence: its address follows from the factory, the
settlement address and the payment's salt (its id), computed off-chain by
``chains.forwarder.deposit_address``; nothing is deployed until the sweeper flushes it.
"""
from __future__ import annotations

import hashlib
import threading
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from kassa_common.chains.forwarder import deposit_address, payment_salt
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


@dataclass(frozen=True)
class Receiving:
    """Where a payment is paid, and what the payment row records about it."""

    address: str
    derivation_index: int | None = None  # xpub mode
    settlement_address: str | None = None  # forwarder mode: where the deposit forwards to
    deposit_salt: str | None = None  # forwarder mode: 0x + 64 hex


def merchant_wallet(session: Session, merchant_id: uuid.UUID, test_mode: bool,
                    chain: str) -> tuple[str | None, str | None]:
    """The merchant's (extended public key, settlement address) for the chain; one is set."""
    row = session.execute(
        sa.select(Wallet.xpub, Wallet.settlement_address).where(
            Wallet.merchant_id == merchant_id, Wallet.mode == ("test" if test_mode else "live"), Wallet.chain == chain
        )
    ).first()
    return (row.xpub, row.settlement_address) if row else (None, None)


def xpub_or_test_key(xpub: str | None, test_mode: bool, chain: str) -> str:
    if xpub:
        return xpub
    if test_mode:
        return TEST_XPUBS[chain]  # published test key: test payments never touch a chain
    raise WalletNotConfigured(
        f"no {chain} wallet is configured for live mode: set an extended public key first "
        f"(dashboard wallet settings, or `kassa wallet set --chain {chain}`)"
    )


def next_address(session: Session, network: Network, xpub: str) -> tuple[str, int]:
    """The next unused address of ``xpub`` for this network's chain, and its index."""
    name = sequence_name(network.kind, xpub)
    _ensure_sequence(session, name)
    index = session.execute(sa.text(f"SELECT nextval('{name}')")).scalar_one()
    return derive_address(network.kind, xpub, index, bech32_hrp=network.bech32_hrp), index


def forwarder_deposit(network: Network, settlement: str, payment_id: uuid.UUID) -> Receiving:
    """The payment's deposit address, which can only ever forward to ``settlement``."""
    if network.forwarder_factory is None:
        raise WalletNotConfigured(f"forwarder settlement is not available on {network.name}; "
                                  "set an extended public key for it instead")
    salt = payment_salt(payment_id)
    return Receiving(deposit_address(network.forwarder_factory, settlement, salt),
                     settlement_address=settlement, deposit_salt="0x" + salt.hex())


def receiving_address(session: Session, merchant_id: uuid.UUID, test_mode: bool, network: Network,
                      payment_id: uuid.UUID) -> Receiving:
    """Where payment ``payment_id`` is paid: its forwarder deposit if the merchant settles to
    one address on this chain, else the next address of the merchant's extended public key."""
    xpub, settlement = merchant_wallet(session, merchant_id, test_mode, network.kind)
    if settlement is not None:
        return forwarder_deposit(network, settlement, payment_id)
    address, index = next_address(session, network, xpub_or_test_key(xpub, test_mode, network.kind))
    return Receiving(address, derivation_index=index)
