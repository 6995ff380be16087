"""The Bitcoin gap monitor: how many unused addresses in a row the merchant's wallet must look past.
A Litecoin key (``chain="litecoin"``) has its own, over its own networks' payments.

Every Bitcoin payment takes the next address ``.../0/i`` of the merchant's account key, paid
or not. A wallet restored or imported from that key finds its funds by deriving addresses in
order and stops after a run of unused ones, the gap limit (20 by default in Electrum and
Sparrow, BIP 44's figure). A checkout the customer abandons leaves its address unused, so a
shop with many abandoned checkouts soon has a run of more than 20 unused addresses before a
paid one, and the wallet shows a balance short of what Kassa says was paid: BTCPay's most
common support question. The monitor finds the longest such run and says what gap limit to set.

The run counts indexes, not payments: every index from 0 to the highest one handed out
that no funds reached is unused to the wallet, whether its payment expired, was canceled,
is still pending, or the index was never attached to a payment of this mode at all (a
rolled-back transaction, or, before each mode had its own sequence, a test-mode payment on
the same key). Each mode counts its own range of the key: live payments from index 0, test
payments from ``addresses.TEST_INDEX_BASE``; test payments never take a live index. So the longest run is the
longest stretch between consecutive funded indexes, the stretch before the first one, or the
one after the last (the next payment's address lies beyond it). One window-function query
over the merchant's funded payments finds it; the highest index is the larger of the
payments' and the key's sequence (``payments.addresses``), which also counts indexes whose
transaction rolled back.

Funded means a transfer reached the address: ``amount_received`` above zero, or any transfer
recorded for the payment that a reorg has not taken back (seen in the mempool, late, after
completion). Test-mode payments are simulated: they never reach a chain, so in test mode the
figures describe what Kassa handed out, not a real wallet.

Payments count from the time the mode's Bitcoin wallet was first set (before that, test mode
uses the published test key). Payments carry an index, not the key that made it: if the
merchant later replaced the key, the earlier key's funded indexes would hide runs of the
current one. The rows the answer rests on (the earliest payment, the run's ends, the highest
index) are checked against the current key, and if one belongs to another key the funded
payments are checked one by one (a derivation each), so the answer never rests on another
key's payments.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.chains.descriptor import Descriptors, wallet_descriptors
from kassa_common.chains.hd import CHAIN_HRPS, derive_address, mode_hrp
from kassa_common.chains.networks import Network
from kassa_common.models import Payment, Wallet
from kassa_common.payments.addresses import first_index, sequence_name

DEFAULT_GAP_LIMIT = 20  # Electrum's and Sparrow's default, and BIP 44's
GAP_MARGIN = 20  # room for the abandoned checkouts still to come


@dataclass(frozen=True)
class Gap:
    """The key's address use as a wallet sees it."""

    handed_out: int  # addresses handed out: the highest index + 1 (0: none yet)
    funded: int  # distinct indexes that received funds
    longest_run: int  # longest run of consecutive unused indexes in [0, handed_out)
    run_from: int | None  # its first index
    run_to: int | None  # its last index
    first_payment_at: datetime | None  # for a rescan's start (Bitcoin Core's "timestamp")
    first: int = 0  # the mode's first index of the key (``addresses.first_index``): counts start there

    @property
    def gap_limit(self) -> int:
        """The gap limit to set: the longest run and a margin, never below the default."""
        return max(DEFAULT_GAP_LIMIT, self.longest_run + GAP_MARGIN)

    @property
    def over_default(self) -> bool:
        """A run of 20 unused addresses already hides the next paid one from a wallet left at 20."""
        return self.longest_run >= DEFAULT_GAP_LIMIT

    @property
    def range_end(self) -> int:
        """The last index a Bitcoin Core import should cover: the highest one and the gap."""
        return self.highest + self.gap_limit

    @property
    def highest(self) -> int:
        """The highest index handed out (the first one when none was)."""
        return self.first + max(self.handed_out - 1, 0)

    def summary(self) -> str:
        if not self.handed_out:
            return "no address handed out yet"
        run = (
            f"the longest run of unused addresses is {self.longest_run} (indexes {self.run_from}-{self.run_to})"
            if self.longest_run
            else "no unused address lies before a paid one"
        )
        return f"{self.handed_out} address(es) handed out, {self.funded} received funds; {run}"

    def warning(self) -> str | None:
        if not self.over_default:
            return None
        return (
            f"{self.longest_run} unused addresses in a row: a wallet left at the default gap limit of "
            f"{DEFAULT_GAP_LIMIT} stops before the payments after them and shows a balance short of what "
            f"Kassa received. Set the gap limit to at least {self.gap_limit}."
        )

    def advice(self) -> list[str]:
        n = self.gap_limit
        return [
            f"set the gap limit to at least {n}",
            f"Electrum: in its console (View → Show Console), `wallet.change_gap_limit({n})`",
            f"Sparrow: Settings → Advanced → Gap limit: {n}",
            (
                f'Bitcoin Core: importdescriptors with "range": [{self.first}, {self.range_end}] (the highest '
                f"index, {self.highest}, plus {n})"
            ),
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "handed_out": self.handed_out,
            "funded": self.funded,
            "longest_run": self.longest_run,
            "run_from": self.run_from,
            "run_to": self.run_to,
            "gap_limit": self.gap_limit,
            "default_gap_limit": DEFAULT_GAP_LIMIT,
            "over_default": self.over_default,
            "range": [self.first, self.range_end],
            "warning": self.warning(),
            "first_payment_at": self.first_payment_at.isoformat() if self.first_payment_at else None,
        }


def bitcoin_wallet(session: Session, merchant_id: uuid.UUID, mode: str, chain: str = "bitcoin") -> Wallet | None:
    """The merchant's Bitcoin (or ``chain``) wallet in ``mode`` (an account key), or None when none is set."""
    return session.scalar(
        sa.select(Wallet).where(
            Wallet.merchant_id == merchant_id, Wallet.mode == mode, Wallet.chain == chain, Wallet.xpub.is_not(None)
        )
    )


_FUNDED = """(p.amount_received_units > 0 OR EXISTS (
    SELECT 1 FROM transfers t WHERE t.payment_id = p.id AND t.status <> 'ORPHANED'))"""
_CANDIDATES = """p.merchant_id = :merchant AND p.test_mode = :test_mode AND p.network = ANY(:networks)
      AND p.derivation_index >= :first AND p.created_at >= :since"""

# One row: the highest index handed out, the funded count, the last funded index, the
# longest run before a funded index (and that index), the first payment's time, and which
# payments to check against the key. ``lag`` pairs each funded index with the one before it.
_GAP_SQL = sa.text(f"""
WITH c AS (
    SELECT p.derivation_index - :first AS i, p.created_at, {_FUNDED} AS funded
    FROM payments p WHERE {_CANDIDATES}
), f AS (
    SELECT i, i - coalesce(lag(i) OVER (ORDER BY i), -1) - 1 AS run_before
    FROM (SELECT DISTINCT i FROM c WHERE funded) d
)
SELECT (SELECT max(i) FROM c) AS highest,
       (SELECT count(*) FROM f) AS funded,
       (SELECT max(i) FROM f) AS last_funded,
       (SELECT min(created_at) FROM c) AS first_at,
       best.i AS run_next, best.run_before,
       (SELECT array_agg(DISTINCT x) FROM (
            (SELECT i AS x FROM c ORDER BY created_at, i LIMIT 1)
            UNION ALL (SELECT max(i) FROM c)
            UNION ALL (SELECT max(i) FROM f)) xs WHERE x IS NOT NULL) AS probe
FROM (SELECT 1) one
LEFT JOIN LATERAL (SELECT i, run_before FROM f ORDER BY run_before DESC, i LIMIT 1) best ON true
""")


def _sequence_highest(session: Session, xpub: str, test_mode: bool, chain: str) -> int | None:
    """The highest index the key's sequence of this mode handed out (rolled-back payments
    included), counted from the mode's first index, or None if it handed none out (or does
    not exist yet).

    Read from ``pg_sequences`` (NULL ``last_value`` until the first ``nextval``), not by
    looking the name up (``to_regclass``, ``FROM name``): a name lookup that fails leaves a
    negative entry in the pooled connection's catalog cache, and a payment transaction that
    later runs on that connection would not see the sequence ``addresses`` creates meanwhile.
    """
    last = session.scalar(
        sa.text(
            "SELECT last_value FROM pg_sequences WHERE sequencename = :n AND schemaname = ANY(current_schemas(false))"
        ),
        {"n": sequence_name(chain, xpub, test_mode)},
    )
    return None if last is None else last - first_index(test_mode)


def _hrps(networks: Iterable[Network], test_mode: bool) -> tuple[str, ...]:
    """The address prefixes this mode's payments show on ``networks``."""
    return tuple({mode_hrp(n.bech32_hrp, test_mode) for n in networks if n.bech32_hrp})


def _belongs(xpub: str, index: int, address: str, hrps: tuple[str, ...]) -> bool:
    if not hrps:  # no Bitcoin network configured: nothing to tell keys apart by
        return True
    chain = next(c for c, known in CHAIN_HRPS.items() if hrps[0] in known)  # the networks' key chain
    return any(derive_address(chain, xpub, index, bech32_hrp=hrp).lower() == address.lower() for hrp in hrps)


def address_gap(
    session: Session,
    merchant_id: uuid.UUID,
    test_mode: bool,
    networks: Iterable[Network],
    xpub: str,
    since: datetime,
    chain: str = "bitcoin",
) -> Gap:
    """The gap of key ``xpub`` over the merchant's payments of this mode on the networks of
    ``chain`` among ``networks`` (those whose key chain it is) created since ``since``."""
    mine = [n for n in networks if n.kind == "bitcoin" and n.key_chain == chain]
    return _from(first_index(test_mode), _relative_gap(session, merchant_id, test_mode, mine, xpub, since, chain))


def _from(first: int, gap: Gap) -> Gap:
    """``gap``, counted from index 0, as the indexes of a mode whose first index is ``first``."""

    def at(i: int | None) -> int | None:
        return None if i is None else first + i

    return replace(gap, first=first, run_from=at(gap.run_from), run_to=at(gap.run_to))


def _relative_gap(
    session: Session,
    merchant_id: uuid.UUID,
    test_mode: bool,
    networks: list[Network],
    xpub: str,
    since: datetime,
    chain: str,
) -> Gap:
    """The gap with the mode's indexes counted from its first one."""
    params = {
        "merchant": merchant_id,
        "test_mode": test_mode,
        "networks": [n.name for n in networks],
        "since": since,
        "first": first_index(test_mode),
    }
    hrps = _hrps(networks, test_mode)
    row = session.execute(_GAP_SQL, params).one()
    sequence_highest = _sequence_highest(session, xpub, test_mode, chain)
    if row.probe and not _probes_belong(session, params, row, xpub, hrps):
        return _gap_checked(session, params, xpub, hrps, sequence_highest, row.first_at)
    highest = max((h for h in (row.highest, sequence_highest) if h is not None), default=None)
    if highest is None:
        return Gap(0, 0, 0, None, None, None)
    inner = row.run_before or 0
    trailing = highest - row.last_funded if row.last_funded is not None else highest + 1
    if trailing > inner:
        start = row.last_funded + 1 if row.last_funded is not None else 0
        return Gap(highest + 1, row.funded, trailing, start, highest, row.first_at)
    if inner == 0:
        return Gap(highest + 1, row.funded, 0, None, None, row.first_at)
    return Gap(highest + 1, row.funded, inner, row.run_next - inner, row.run_next - 1, row.first_at)


def _probes_belong(
    session: Session, params: dict[str, Any], row: sa.Row[Any], xpub: str, hrps: tuple[str, ...]
) -> bool:
    """Whether the payments at the indexes the answer rests on (the earliest payment, the
    highest index, the last funded one, and the ends of the longest inner run) are the key's."""
    wanted = set(row.probe)
    if row.run_next is not None and row.run_before:
        wanted |= {row.run_next, row.run_next - row.run_before - 1}
    rows = session.execute(
        sa.select(Payment.derivation_index, Payment.address).where(
            Payment.merchant_id == params["merchant"],
            Payment.test_mode == params["test_mode"],
            Payment.network.in_(params["networks"]),
            Payment.derivation_index.in_(sorted(params["first"] + i for i in wanted)),
            Payment.created_at >= params["since"],
        )
    ).all()
    return all(_belongs(xpub, r.derivation_index, r.address, hrps) for r in rows)


def _gap_checked(
    session: Session,
    params: dict[str, Any],
    xpub: str,
    hrps: tuple[str, ...],
    sequence_highest: int | None,
    first_at: datetime | None,
) -> Gap:
    """The same answer with every payment checked against the key (after a key change)."""
    rows = session.execute(
        sa.text(f"""
        SELECT p.derivation_index - :first AS i, p.address, {_FUNDED} AS funded FROM payments p
        WHERE {_CANDIDATES}"""),
        params,
    ).all()
    mine = [r for r in rows if _belongs(xpub, params["first"] + r.i, r.address, hrps)]
    return gap_of(
        sorted({r.i for r in mine if r.funded}),
        max([r.i for r in mine] + ([sequence_highest] if sequence_highest is not None else []), default=None),
        first_at,
    )


def gap_of(funded: list[int], highest: int | None, first_at: datetime | None = None) -> Gap:
    """The gap from the sorted funded indexes and the highest index handed out (pure)."""
    if highest is None:
        return Gap(0, 0, 0, None, None, first_at)
    best, start = 0, None
    previous = -1
    for i in [*funded, highest + 1]:  # the stretch after the last funded index ends at the highest
        run = i - previous - 1
        if run > best:
            best, start = run, previous + 1
        previous = i
    return Gap(
        highest + 1, len(funded), best, start, start + best - 1 if best and start is not None else None, first_at
    )


@dataclass(frozen=True)
class WatchOnly:
    """What the merchant needs to watch their Bitcoin payments in their own wallet."""

    descriptors: Descriptors
    gap: Gap

    def import_request(self) -> list[dict[str, Any]]:
        """Bitcoin Core's ``importdescriptors`` argument: both branches, active, over the range
        the gap needs, rescanning from the first payment (or from now for a new key)."""
        start = int(self.gap.first_payment_at.timestamp()) if self.gap.first_payment_at else "now"
        return [
            {
                "desc": desc,
                "range": [self.gap.first, self.gap.range_end],
                "timestamp": start,
                "active": True,
                "internal": internal,
            }
            for desc, internal in ((self.descriptors.receive, False), (self.descriptors.change, True))
        ]

    def lines(self) -> list[str]:
        """``kassa wallet descriptor``'s text: the descriptors, key origin, gap, import command."""
        d, gap = self.descriptors, self.gap
        origin = (
            f"key origin: [{d.origin}]"
            if d.origin
            else "key origin: unknown (an account xpub does not carry its master key's fingerprint): the descriptors "
            "watch without it; add --fingerprint F (your wallet shows it) to include it"
        )
        enough = f"  (the default gap limit of {DEFAULT_GAP_LIMIT} finds every payment so far)"
        return [
            "receive (the addresses Kassa hands out):",
            f"  {d.receive}",
            "change (for a wallet that also spends):",
            f"  {d.change}",
            origin,
            "",
            f"gap: {gap.summary()}",
            *(f"  {line}" for line in gap.advice()),
            *([] if gap.over_default else [enough]),
            "",
            "Bitcoin Core (a watch-only wallet: createwallet NAME true true):",
            f"  importdescriptors '{json.dumps(self.import_request())}'",
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "receive": self.descriptors.receive,
            "change": self.descriptors.change,
            "key_origin": self.descriptors.origin,
            "gap": self.gap.to_json(),
            "importdescriptors": self.import_request(),
        }


def bitcoin_watch_only(
    session: Session,
    merchant_id: uuid.UUID,
    mode: str,
    networks: Iterable[Network],
    fingerprint: str | None = None,
    chain: str = "bitcoin",
) -> WatchOnly | None:
    """The descriptors and gap of the merchant's Bitcoin (or ``chain``: litecoin) key in
    ``mode``, or None when no key is set."""
    wallet = bitcoin_wallet(session, merchant_id, mode, chain)
    if wallet is None or wallet.xpub is None:  # the query asks for a key
        return None
    return WatchOnly(
        wallet_descriptors(wallet.xpub, fingerprint, chain),
        address_gap(session, merchant_id, mode == "test", networks, wallet.xpub, wallet.created_at, chain),
    )
