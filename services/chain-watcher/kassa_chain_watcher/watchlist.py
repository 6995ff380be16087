"""The addresses a watcher matches transfers against, held in memory as a set.

Loaded from the payments table at start and reloaded now and then (the source of truth),
and fed at once by ``payment.created`` events from the bus (``PaymentFeed``, the handler
of a common consumer): each watcher process takes them from a queue of its own
(``Topology.watcher_feed``), which expires once the process is gone. A message the feed
missed (the process was starting, the broker away) costs no payment: the watcher reads the
addresses from the database when it becomes active and every ``reload_seconds``, and
backfills the recent ones from the chain.
Addresses stay watched for ``LATE_DAYS`` after a payment's expiry, for late payments.

Native coin from contracts: of the addresses, those of open payments in the network's
native coin are also kept apart (``native``): the EVM watcher follows their balances
(``balances.py``), which it cannot afford for every watched address.

Wrong network: an EVM address is the same on every EVM chain, so an EVM network's watcher
also watches the payments of the other EVM networks (``address_networks``); what it finds
there it reports as a transfer on its own network, and the settler records it on the
payment without counting it.

Refund payouts: the addresses of claimed refunds waiting for their payout
(``AWAITING_PAYMENT``) on the watcher's own network are watched too, the same way; the
settler hands what reaches them to ``kassa_common.refunds.payouts``. Those waiting for the
network's native coin are followed by balance too (a payout from a Safe or an exchange's
batch is a call inside a contract).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.chains.networks import Network
from kassa_common.messaging.consumer import Consumer, Delivered, Reject
from kassa_common.messaging.messages import AddressFeed, EventType
from kassa_common.messaging.topology import Topology
from kassa_common.models import Payment, Refund
from kassa_common.statuses import PaymentStatus, RefundStatus
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.chain_watcher")
LATE_DAYS = 7
# a refund waiting for its payout (claimed, or its payout lost in a reorg): its address is watched
# at once (the reload would in time)
REFUND_CLAIMED, REFUND_REORGED = EventType.REFUND_CLAIMED, EventType.REFUND_REORGED


class Watchlist:
    """A thread-safe set of normalised addresses; remembers which ones are new since last asked.

    ``coin``: (network, native symbol) for a watcher that follows the balances of open
    native-coin payments' addresses (``native``, a subset); None otherwise.
    """

    def __init__(
        self,
        normalize: Callable[[str], str] = str.lower,
        addresses: Iterable[str] = (),
        *,
        coin: tuple[str, str] | None = None,
    ) -> None:
        self.normalize, self.coin = normalize, coin
        self._all = {normalize(a) for a in addresses}
        self._native: frozenset[str] = frozenset()
        self._new: set[str] = set()
        self._lock = threading.Lock()
        self.changed = threading.Event()  # set when an address arrives: the scanner wakes up

    def __contains__(self, address: object) -> bool:
        return address in self._all  # set membership is atomic; callers pass normalised addresses

    def __len__(self) -> int:
        return len(self._all)

    @property
    def native(self) -> frozenset[str]:
        """The addresses of open payments in the native coin (whose balances are followed)."""
        return self._native

    def add(self, address: str, *, native: bool = False) -> bool:
        a = self.normalize(address)
        with self._lock:
            if native and a not in self._native:
                self._native = self._native | {a}
            if a in self._all:
                return False
            self._all.add(a)
            self._new.add(a)
        self.changed.set()
        return True

    def replace(self, addresses: Iterable[str], *, native: Iterable[str] = (), initial: bool = False) -> int:
        """Make the set exactly ``addresses`` (``native`` among them); those not known before
        count as new (unless initial)."""
        fresh = {self.normalize(a) for a in addresses}
        with self._lock:
            added = fresh - self._all
            self._native = frozenset(self.normalize(a) for a in native)
            self._all = fresh | (self._new if not initial else set())
            if not initial:
                self._new |= added
        if added and not initial:
            self.changed.set()
        return len(added)

    def take_new(self) -> set[str]:
        with self._lock:
            new, self._new = self._new, set()
        return new

    def requeue(self, addresses: set[str]) -> None:
        with self._lock:
            self._new |= addresses


def address_networks(network: Network, networks: Iterable[Network]) -> tuple[str, ...]:
    """The networks whose payments' addresses a watcher of ``network`` matches: its own and,
    for an EVM network, every other EVM network's (funds sent on the wrong network)."""
    if network.kind != "evm":
        return (network.name,)
    return (network.name, *(n.name for n in networks if n.kind == "evm" and n.name != network.name))


def watched_addresses(session: Session, network: str | Collection[str]) -> list[str]:
    """Live payments on ``network`` (a name, or the names of ``address_networks``) that can
    still receive funds worth reporting."""
    names = [network] if isinstance(network, str) else list(network)
    horizon = utcnow() - timedelta(days=LATE_DAYS)
    return list(
        session.scalars(
            sa.select(Payment.address).where(
                Payment.network.in_(names), Payment.test_mode.is_(False), Payment.expires_at > horizon
            )
        )
    ) + refund_addresses(session, names[0])


def refund_addresses(session: Session, network: str, token: str | None = None) -> list[str]:
    """The addresses of live refunds on ``network`` claimed and waiting for their payout (in
    ``token`` only, if given)."""
    query = sa.select(Refund.address).where(
        Refund.network == network,
        Refund.status == RefundStatus.AWAITING_PAYMENT,
        Refund.test_mode.is_(False),
        Refund.address.is_not(None),
    )
    if token is not None:
        query = query.where(Refund.token == token)
    return [a for a in session.scalars(query) if a]


def open_native_addresses(session: Session, network: str, symbol: str) -> list[str]:
    """Open live payments on ``network`` in its native coin (``symbol``), and claimed refunds
    waiting for a payout in it."""
    return list(
        session.scalars(
            sa.select(Payment.address).where(
                Payment.network == network,
                Payment.token == symbol,
                Payment.test_mode.is_(False),
                Payment.status.in_([PaymentStatus.PENDING, PaymentStatus.PARTIALLY_PAID]),
            )
        )
    ) + refund_addresses(session, network, symbol)


def reload(
    watchlist: Watchlist, sessions: sessionmaker[Session], network: str | Collection[str], *, initial: bool = False
) -> int:
    with sessions() as s:
        native = open_native_addresses(s, *watchlist.coin) if watchlist.coin else ()
        return watchlist.replace(watched_addresses(s, network), native=native, initial=initial)


class PaymentFeed:
    """Puts the address of each new live payment (``payment.created``), and of each refund
    waiting for its payout (``refund.claimed``, ``refund.reorged``), into the watchlists: the
    handler of this process's feed consumer (``consumer``)."""

    def __init__(self, watchlists: dict[str, Watchlist], *, evm_networks: Collection[str] = ()) -> None:
        self.watchlists = watchlists
        # a payment on one of these is watched by the watchlists of all of them (wrong network)
        self.evm_networks = frozenset(n.upper() for n in evm_networks)

    def handle(self, _session: Session, msg: Delivered) -> None:
        if msg.routing_key in (REFUND_CLAIMED, REFUND_REORGED):
            self._on_refund_awaiting(msg.body)
            return
        try:
            feed = AddressFeed.from_message(msg.routing_key, msg.body)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise Reject(f"malformed payment.created: {exc!r}") from None
        self.add(feed)

    def add(self, feed: AddressFeed) -> None:
        if feed.test_mode:
            return
        names = self.evm_networks if feed.network in self.evm_networks else {feed.network}
        for name in names:
            watchlist = self.watchlists.get(name)
            if watchlist is not None:
                watchlist.add(feed.address, native=watchlist.coin == (feed.network, feed.token))

    def _on_refund_awaiting(self, event: dict) -> None:
        """A refund waiting for its payout: its address watched on the refund's own network only."""
        try:
            data, test_mode = event["data"], bool(event.get("test_mode"))
            network, address = str(data["network"]).upper(), str(data["address"])
            token = str(data.get("token", "")).upper()
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise Reject(f"malformed refund event: {exc!r}") from None
        watchlist = self.watchlists.get(network)
        if test_mode or not address or watchlist is None:
            return
        watchlist.add(address, native=watchlist.coin == (network, token))

    def consumer(self, make: Callable[..., Consumer], topo: Topology, process: str) -> Consumer:
        """The consumer of process ``process``'s feed; ``make`` builds it (``Worker.consumer``)."""
        return make(topo.watcher_feed(process), self.handle)
