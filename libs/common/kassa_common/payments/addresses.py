"""Receiving addresses: the next child of the merchant's own extended public key, or, when
the merchant settles to one address (EVM forwarder mode), the payment's own deposit.

Child indexes come from one PostgreSQL sequence per (chain, key, mode): ``nextval`` hands
each index out once, takes no row lock and never waits for other transactions, so
concurrent payments neither share an address nor queue behind each other's commits. An
index is skipped only when the transaction that took it rolls back. The sequence is named
after the key material, not the text the merchant pasted: the same key entered again as a
zpub instead of an xpub continues where it was (migration 0005 carried the older, per-text
sequences over). A sequence created for a key that payments already used (its old
sequence was not carried over, or a restore left it out) starts after the last address
they hold: a key never hands out an address twice.

Modes: the same key set for test and for live mode must not have test payments use up the
live wallet's addresses (a Bitcoin wallet stops looking after a run of unused ones, its gap
limit). So each mode has its own sequence and its own range of the key's receive branch:
live payments take ``.../0/0``, ``.../0/1``, … (the addresses the merchant's wallet shows),
test payments ``.../0/1000000000`` and up (``TEST_INDEX_BASE``), which no wallet looks at and
no live payment reaches. Test payments also show the test network's address form
(``hd.mode_hrp``: ``tb1…`` on BITCOIN, ``bcrt1…`` on BITCOIN_REGTEST, ``tltc1…`` on
LITECOIN), never one that takes
real coins. A key's live sequence keeps the name its one sequence had before modes were
told apart (it continues after every index that sequence handed out, to either mode), and
its test sequence starts at the base: no address is handed out twice.

A live payment re-checks its key (``live_keys``): a key stored before the rules, or
under ``KASSA_ENV=development``, never takes real money outside development.

A merchant's next payment almost always derives from the key its last one did, so the
process remembers that key (``index_hint``): the caller can then take the index in the
statement that reads the wallet, guarded by the key read there being the one expected,
instead of in a round trip of its own.

A forwarder deposit needs no sequence: its address follows from the factory, the
settlement address and the payment's salt (its id), computed off-chain by
``chains.forwarder.deposit_address``; nothing is deployed until the sweeper flushes it.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from kassa_common.chains.forwarder import deposit_address, payment_salt
from kassa_common.chains.hd import CHAIN_HRPS, TEST_XPUBS, InvalidXpub, derive_address, key_material, mode_hrp
from kassa_common.chains.live_keys import live_key_warning
from kassa_common.chains.networks import Network
from kassa_common.db import autocommit
from kassa_common.errors import WalletNotConfigured
from kassa_common.models import Payment
from kassa_common.owner import Owner

_known: set[tuple[Engine, str]] = set()  # (engine, sequence) pairs known to exist in the engine's database
_lock = threading.Lock()
_last_keys: dict[tuple[Engine, uuid.UUID, bool, str], str] = {}  # (engine, merchant, test mode, chain) -> key


TEST_INDEX_BASE = 1_000_000_000  # test mode's first index of a key; live mode's is 0


def first_index(test_mode: bool) -> int:
    """The first index of a key a payment of this mode takes."""
    return TEST_INDEX_BASE if test_mode else 0


@lru_cache(maxsize=1024)
def sequence_name(chain: str, xpub: str, test_mode: bool = False) -> str:
    """One sequence per key and mode, whatever the key's encoding."""
    mode = b":test" if test_mode else b""  # live keeps the name of the key's one former sequence
    return "kassa_idx_" + hashlib.sha256(chain.encode() + mode + b":" + key_material(chain, xpub)).hexdigest()[:32]


def _ensure_sequence(engine: Engine, name: str, chain: str, xpub: str, test_mode: bool) -> None:
    """Create the key's sequence of a mode once per engine, that is per database (on a
    connection of its own, outside the caller's transaction, so it survives it)."""
    known = (engine, name)
    if known in _known:
        return
    with _lock:
        if known in _known:
            return
        with autocommit(engine) as conn:
            if conn.scalar(sa.text("SELECT to_regclass(:n)"), {"n": name}) is None:
                start = _first_unused_index(conn, chain, xpub, first_index(test_mode))
                try:
                    last = TEST_INDEX_BASE - 1 if not test_mode else 2**31 - 1  # live never reaches test's range
                    conn.exec_driver_sql(
                        f"CREATE SEQUENCE IF NOT EXISTS {name} MINVALUE 0 MAXVALUE {last} START WITH {start}"
                    )
                except DBAPIError as exc:  # a concurrent creator won the race: the sequence exists
                    if "already exists" not in str(exc.orig) and "duplicate key" not in str(exc.orig):
                        raise
        _known.add(known)


def _first_unused_index(conn: Connection, chain: str, xpub: str, base: int, window: int = 100) -> int:
    """The index after the last one from ``base`` on whose address a payment holds (``base``
    for a key never used there)."""
    hrps = CHAIN_HRPS.get(chain, (None,))  # a Bitcoin-family key's address differs per network

    def last_held(start: int) -> int | None:
        wanted = {
            derive_address(chain, xpub, base + i, bech32_hrp=hrp).lower(): i
            for i in range(start, start + window)
            for hrp in hrps
        }
        held = conn.scalars(
            sa.select(sa.func.lower(Payment.address)).where(sa.func.lower(Payment.address).in_(list(wanted)))
        ).all()
        return max((wanted[a] for a in held), default=None)

    return base + first_unused(last_held, window)


def first_unused(last_held: Callable[[int], int | None], window: int) -> int:
    """The index after the last held one, given ``last_held(start)``: the highest held index
    in ``[start, start + window)``, or None.

    A key's used indexes run from 0 with few gaps, so windows are probed at doubling offsets,
    then halved down to the last window that holds one: a few indexed queries even for a key
    with a million payments.
    """
    if last_held(0) is None:
        return 0
    low, high = 0, window  # the window at ``low`` holds an index; the one at ``high`` is probed next
    while last_held(high) is not None:
        low, high = high, high * 2
    while high - low > window:
        middle = (low + high) // 2
        low, high = (middle, high) if last_held(middle) is not None else (low, middle)
    last = last_held(low)
    assert last is not None  # the window at ``low`` holds an index
    return last + 1


@dataclass(frozen=True)
class Receiving:
    """Where a payment is paid, and what the payment row records about it."""

    address: str
    derivation_index: int | None = None  # xpub mode
    settlement_address: str | None = None  # forwarder mode: where the deposit forwards to
    deposit_salt: str | None = None  # forwarder mode: 0x + 64 hex


def xpub_or_test_key(xpub: str | None, test_mode: bool, chain: str, *, allow_test_keys: bool = False) -> str:
    """The key payments derive from: the merchant's, or in test mode without one the published
    test key. A live key is checked again (``live_keys``) before it takes real money."""
    if xpub and not test_mode:
        try:
            live_key_warning(chain, xpub, allow_test_keys=allow_test_keys)
        except InvalidXpub as exc:
            raise WalletNotConfigured(
                f"the live {chain} wallet cannot take payments: {exc}. Set another key "
                f"(dashboard wallet settings, or `kassa wallet set --chain {chain}`)"
            ) from None
    if xpub:
        return xpub
    if test_mode:
        return TEST_XPUBS[chain]  # published test key: test payments never touch a chain
    raise WalletNotConfigured(
        f"no {chain} wallet is configured for live mode: set an extended public key first "
        f"(dashboard wallet settings, or `kassa wallet set --chain {chain}`)"
    )


def payment_address(network: Network, xpub: str, index: int, test_mode: bool) -> str:
    """The address of child ``index`` of ``xpub`` as a payment of this mode shows it on ``network``."""
    return derive_address(network.key_chain, xpub, index, bech32_hrp=mode_hrp(network.bech32_hrp, test_mode))


def first_address(chain: str, xpub: str, test_mode: bool) -> str:
    """The first address a payment of this mode gets from ``xpub`` (shown when a key is set, to
    check it against the wallet): on Bitcoin (Litecoin) in the form of the BITCOIN (LITECOIN)
    network's mode."""
    mainnet = CHAIN_HRPS[chain][0] if chain in CHAIN_HRPS else None
    return derive_address(chain, xpub, first_index(test_mode), bech32_hrp=mode_hrp(mainnet, test_mode))


def next_address(conn: Connection, network: Network, xpub: str, test_mode: bool) -> tuple[str, int]:
    """The next unused address of ``xpub`` in this mode for this network's chain, and its index."""
    name = sequence_name(network.key_chain, xpub, test_mode)
    _ensure_sequence(conn.engine, name, network.key_chain, xpub, test_mode)
    index = conn.exec_driver_sql(f"SELECT nextval('{name}')").scalar_one()
    return payment_address(network, xpub, index, test_mode), index


def forwarder_deposit(network: Network, settlement: str, payment_id: uuid.UUID) -> Receiving:
    """The payment's deposit address, which can only ever forward to ``settlement``."""
    if network.forwarder_factory is None:
        raise WalletNotConfigured(
            f"forwarder settlement is not available on {network.name}; set an extended public key for it instead"
        )
    salt = payment_salt(payment_id)
    return Receiving(
        deposit_address(network.forwarder_factory, settlement, salt),
        settlement_address=settlement,
        deposit_salt="0x" + salt.hex(),
    )


@dataclass(frozen=True)
class IndexHint:
    """The key a merchant's next payment on a chain most likely derives from, and its
    sequence (known to exist); both None when there is no likely key."""

    key: str | None = None
    sequence: str | None = None


def index_hint(engine: Engine, owner: Owner, chain: str) -> IndexHint:
    """The key this process last derived the merchant's address from on ``chain`` (in test
    mode without one, the published test key), if its sequence is known to exist."""
    key = _last_keys.get((engine, owner.merchant_id, owner.test_mode, chain))
    if key is None and owner.test_mode:
        key = TEST_XPUBS[chain]
        _ensure_sequence(engine, sequence_name(chain, key, True), chain, key, True)
    if key is None or (engine, sequence_name(chain, key, owner.test_mode)) not in _known:
        return IndexHint()
    return IndexHint(key, sequence_name(chain, key, owner.test_mode))


def receiving_address(
    conn: Connection,
    owner: Owner,
    network: Network,
    wallet: tuple[str | None, str | None],
    payment_id: uuid.UUID,
    *,
    hint: IndexHint = IndexHint(),
    index: int | None = None,
    allow_test_keys: bool = False,
) -> Receiving:
    """Where payment ``payment_id`` is paid: its forwarder deposit if the merchant settles to
    one address on this chain, else the next address of the merchant's extended public key.
    ``wallet``: the merchant's (extended public key, settlement address) for the network's
    chain in this mode, as the caller read them (both None: no wallet). ``index``: the one
    the caller took from ``hint``'s sequence, valid if the wallet's key is ``hint.key``."""
    xpub, settlement = wallet
    if settlement is not None:
        return forwarder_deposit(network, settlement, payment_id)
    key = xpub_or_test_key(xpub, owner.test_mode, network.key_chain, allow_test_keys=allow_test_keys)
    if index is not None and key == hint.key:
        address = payment_address(network, key, index, owner.test_mode)
    else:
        address, index = next_address(conn, network, key, owner.test_mode)
        if len(_last_keys) > 10_000:
            _last_keys.clear()
        _last_keys[(conn.engine, owner.merchant_id, owner.test_mode, network.key_chain)] = key
    return Receiving(address, derivation_index=index)
