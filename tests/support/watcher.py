"""Running the chain watcher in tests: a private bus, the settler in a thread, a live-mode
API client for a merchant with wallets, and a watcher per network in threads.

A live-EVM test module makes its fixture ``h`` with ``live_evm_fixture`` (on the fixture
``chain``, or ``proxy`` in front of it), a Bitcoin one with ``live_bitcoin_fixture`` (on
``regtest_node``), a Litecoin one with ``live_litecoin_fixture`` (on ``litecoin_node``, a
real litecoind)::

    from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
    from tests.support.watcher import live_evm_fixture

    h = live_evm_fixture(CONFIRMATIONS, watching=True)
"""

from __future__ import annotations

import secrets
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.config import WatcherSettings
from kassa_common.db import unit_of_work
from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.publisher import Publisher
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import ChainBlock, ChainCursor, ChainReport, Event, Payment, SettledWatermark, Transfer
from kassa_common.pricing.amounts import to_base_units
from kassa_chain_watcher.network_watcher import NetworkWatcher, make_watchlist
from kassa_chain_watcher.watchlist import PaymentFeed, Watchlist
from kassa_dev.chain import pay
from kassa_settler.main import transfer_handler
from tests.support.bus import delete_queues, private_topology
from tests.support.wait import until

FAST = WatcherSettings(poll_seconds=0.05, reload_seconds=60.0, standby_seconds=0.2)


def reset_watcher_state(sessions, network: str) -> None:
    """Each test follows its chain from where it stands now (anvil is reverted between tests),
    with a reports ledger and a settled line of its own (the last test's bus is gone)."""
    with unit_of_work(sessions) as s:
        for table in (ChainBlock, ChainCursor, ChainReport, SettledWatermark):
            s.execute(sa.delete(table).where(table.network == network))


@dataclass
class Harness:
    settings: object
    sessions: object
    client: object
    merchant: object
    publisher: Publisher
    topo: object
    network: str
    watchers: list = field(default_factory=list)
    _threads: list = field(default_factory=list)
    feed: Consumer | None = None  # the watchers' payment feed (one per process: one here)
    _feed_thread: threading.Thread | None = None
    watchlist: Watchlist | None = None  # the harness network's
    watchlists: dict = field(default_factory=dict)  # network name -> its watchers' watchlist
    settler: Consumer | None = None
    _settler_thread: threading.Thread | None = None

    # -- payments -------------------------------------------------------------------------
    def create(self, amount=12.34, token="USDC") -> dict:
        r = self.client.post(
            "/v1/api/payments",
            json={"amount": amount, "token": token, "network": self.network},
            headers=self.merchant.headers("live"),
        )
        assert r.status_code == 201, r.get_data(as_text=True)
        relay_pending(self.sessions, self.publisher)  # payment.created reaches the watcher's feed
        return r.get_json()["data"]

    def payment(self, pid) -> Payment:
        with self.sessions() as s:
            return s.get(Payment, uuid.UUID(pid))

    def status(self, pid) -> str:
        return self.payment(pid).status

    def events(self, pid) -> list[str]:
        with self.sessions() as s:
            return list(
                s.scalars(sa.select(Event.type).where(Event.payment_id == uuid.UUID(pid)).order_by(Event.created_at))
            )

    def transfers(self, pid) -> list[Transfer]:
        with self.sessions() as s:
            return list(s.scalars(sa.select(Transfer).where(Transfer.payment_id == uuid.UUID(pid))))

    def wait_status(self, pid, status, timeout=15.0):
        until(lambda: self.status(pid) == status, timeout, message=f"payment {status}")

    # -- watchers -------------------------------------------------------------------------
    def start_watcher(self, options: WatcherSettings = FAST, network: str | None = None) -> NetworkWatcher:
        """A watcher of the harness network, or of another ``network`` (the same feed fills both)."""
        net = self.settings.networks.get(network or self.network)
        if net.name not in self.watchlists:
            self.watchlists[net.name] = make_watchlist(net)
        if net.name == self.network:
            self.watchlist = self.watchlists[net.name]
        if self.feed is None:
            feed = PaymentFeed(
                self.watchlists, evm_networks=[n.name for n in self.settings.networks if n.kind == "evm"]
            )
            self.feed = feed.consumer(self._consumer, self.topo, f"test-{secrets.token_hex(4)}")
            self._feed_thread = threading.Thread(target=self.feed.run, daemon=True)
            self._feed_thread.start()
            until(self.feed.consuming.is_set, message="payment feed consuming")
        watcher = NetworkWatcher(self.settings, net, self.sessions, self.watchlists[net.name], options)
        thread = threading.Thread(target=watcher.run, daemon=True)
        thread.start()
        self.watchers.append(watcher)
        self._threads.append(thread)
        return watcher

    def _consumer(self, queue, handler, **options) -> Consumer:
        return Consumer(self.settings.rabbitmq_url, self.topo, queue, handler, self.sessions, name="test", **options)

    # -- the settler --------------------------------------------------------------------
    def start_settler(self) -> None:
        self.settler = self._consumer(self.topo.settler, transfer_handler(self.topo.settler.name))
        self._settler_thread = threading.Thread(target=self.settler.run, daemon=True)
        self._settler_thread.start()

    def stop_settler(self) -> None:
        if self.settler is not None:
            self.settler.stop()
            self._settler_thread.join(10)
            self.settler = self._settler_thread = None

    def settled_at(self, network: str | None = None):
        """The network's settled line (``SettledWatermark.settled_at``), None before the first."""
        with self.sessions() as s:
            return s.scalar(
                sa.select(SettledWatermark.settled_at).where(SettledWatermark.network == (network or self.network))
            )

    def stop_watchers(self) -> None:
        for w in self.watchers:
            w.stop()
        for t in self._threads:
            t.join(10)
        if self.feed is not None:
            self.feed.stop()
            self._feed_thread.join(10)
            delete_queues(self.settings.rabbitmq_url, [self.feed.queue])


@contextmanager
def harness(settings, engine, sessions, merchant, network: str, *, also: tuple[str, ...] = ()):
    """``also``: other networks whose watchers the test starts (their state is reset too)."""
    from kassa_api.app import create_app

    for name in (network, *also):
        reset_watcher_state(sessions, name)
    with private_topology(settings.rabbitmq_url) as (prefix, topo):
        settings = settings.with_(bus_prefix=prefix)
        publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
        client = create_app(settings, engine=engine).test_client()
        h = Harness(settings, sessions, client, merchant, publisher, topo, network)
        h.start_settler()
        try:
            yield h
        finally:
            h.stop_watchers()
            h.stop_settler()
            publisher.close()


@contextmanager
def live_evm(
    settings,
    engine,
    sessions,
    make_merchant,
    rpc_url: str,
    confirmations: int,
    *,
    watching: bool = False,
    env: dict[str, str] | None = None,
):
    """A harness on LOCAL_EVM, read through ``rpc_url`` and needing ``confirmations``, for a
    merchant whose live EVM wallet is the published test key. ``watching``: with its watcher
    started and active (``h.watcher``). ``env``: more network settings (several nodes, a quorum)."""
    from kassa_common.chains.networks import load_registry
    from tests.support.api import set_live_wallet

    env = {"LOCAL_EVM_RPC_URL": rpc_url, "LOCAL_EVM_CONFIRMATIONS": str(confirmations), **(env or {})}
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, "evm")
    with harness(settings.with_(networks=load_registry(env)), engine, sessions, merchant, "LOCAL_EVM") as h:
        if watching:
            h.watcher = h.start_watcher()
            until(h.watcher.active.is_set, message="watcher active")
        yield h


def live_evm_fixture(confirmations: int, *, watching: bool = False, proxy_path: str | None = None):
    """The fixture ``h`` of a live-EVM test module: ``live_evm`` on the module's ``chain``,
    needing ``confirmations``, its watcher started when ``watching``. With ``proxy_path`` the
    network is read through the module's ``proxy`` (``tests.support.rpc_proxy``) at that path
    ("" its root, "/v3/KEY" a hosted provider's URL)."""
    if proxy_path is None:

        @pytest.fixture(name="h")
        def on_chain(settings, chain, engine, sessions, make_merchant):
            with live_evm(settings, engine, sessions, make_merchant, chain.url, confirmations, watching=watching) as h:
                yield h

        return on_chain

    @pytest.fixture(name="h")
    def through_proxy(settings, proxy, engine, sessions, make_merchant):
        url = proxy.url(proxy_path)
        with live_evm(settings, engine, sessions, make_merchant, url, confirmations, watching=watching) as h:
            yield h

    return through_proxy


@contextmanager
def live_utxo(settings, engine, sessions, make_merchant, node, network: str, confirmations: int = 2):
    """A harness on the Bitcoin-family ``network`` (BITCOIN_REGTEST, LOCAL_LITECOIN), read from
    the regtest ``node`` (``h.node``) and needing ``confirmations``, for a merchant whose live
    wallet of the network's chain is the published test key; its watcher started and active
    (``h.watcher``)."""
    from kassa_common.chains.hd import TEST_XPUBS
    from kassa_common.chains.networks import load_registry
    from tests.support.api import set_live_wallet

    env = {f"{network}_RPC_URL": node.url, f"{network}_CONFIRMATIONS": str(confirmations)}
    registry = load_registry(env)
    chain = registry.get(network).key_chain
    merchant = make_merchant()
    set_live_wallet(sessions, merchant.id, chain, TEST_XPUBS[chain])
    with harness(settings.with_(networks=registry), engine, sessions, merchant, network) as h:
        watcher = h.start_watcher()
        until(watcher.active.is_set, message="watcher active")
        h.node, h.watcher = node, watcher
        h.coin, h.hrp = registry.get(network).tokens[0].symbol, registry.get(network).bech32_hrp
        yield h


def live_bitcoin(settings, engine, sessions, make_merchant, node, confirmations: int = 2):
    """``live_utxo`` on BITCOIN_REGTEST."""
    return live_utxo(settings, engine, sessions, make_merchant, node, "BITCOIN_REGTEST", confirmations)


def live_bitcoin_fixture(confirmations: int = 2):
    """The fixture ``h`` of a Bitcoin test module: ``live_bitcoin`` on the module's
    ``regtest_node`` (``tests.support.bitcoin_rpc``), needing ``confirmations``."""

    @pytest.fixture(name="h")
    def on_regtest(settings, engine, sessions, make_merchant, regtest_node):
        with live_bitcoin(settings, engine, sessions, make_merchant, regtest_node, confirmations) as h:
            yield h

    return on_regtest


def live_litecoin_fixture(confirmations: int = 2):
    """The fixture ``h`` of a Litecoin test module: ``live_utxo`` on LOCAL_LITECOIN, read from
    the session's real ``litecoind`` (``tests.support.litecoind``), needing ``confirmations``."""

    @pytest.fixture(name="h")
    def on_litecoind(settings, engine, sessions, make_merchant, litecoin_node):
        with live_utxo(settings, engine, sessions, make_merchant, litecoin_node, "LOCAL_LITECOIN", confirmations) as h:
            yield h

    return on_litecoind


UTXO_BACKENDS = {  # fixture param -> (the node's fixture, the network)
    "bitcoin": ("regtest_node", "BITCOIN_REGTEST"),  # the double, or a bitcoind at BITCOIN_RPC_URL
    "litecoin": ("litecoin_node", "LOCAL_LITECOIN"),  # a real litecoind
}


def live_utxo_fixture(confirmations: int = 2):
    """The fixture ``h`` of a Bitcoin-family test module whose every test runs on each of
    ``UTXO_BACKENDS`` (the module imports both nodes' fixtures): ``live_utxo`` on it, needing
    ``confirmations``; ``h.coin`` is the network's coin (BTC, LTC), ``h.hrp`` its prefix."""

    @pytest.fixture(name="h", params=list(UTXO_BACKENDS))
    def on_each(request, settings, engine, sessions, make_merchant):
        node_fixture, network = UTXO_BACKENDS[request.param]
        node = request.getfixturevalue(node_fixture)
        with live_utxo(settings, engine, sessions, make_merchant, node, network, confirmations) as h:
            yield h

    return on_each


def at_tip(watcher: NetworkWatcher, chain, confirmations: int, timeout: float = 15.0) -> None:
    """The watcher read the chain's tip and reported what is below it (its confirmed line,
    which moves last, is where the tip makes it)."""

    def there() -> bool:
        st = watcher.scanner.state if watcher.scanner is not None else None
        tip = chain.block_number
        return st is not None and st.head == tip and st.confirmed_through == tip - confirmations + 1

    until(there, timeout, message="watcher at the tip with its confirmed line moved")


def units_due(p: dict) -> int:
    """What payment ``p`` (the API's dict) is due, in base units (ETH 18 decimals, tokens 6)."""
    return to_base_units(Decimal(p["crypto_amount"]), 18 if p["token"] == "ETH" else 6)


def pay_usdc(chain, p: dict, amount_units: int | None = None, sender: str | None = None) -> str:
    """Send ``amount_units`` of USDC (by default what ``p`` is due) to its address on anvil,
    from ``sender`` (by default anvil's first account); the transaction's hash."""
    amount = units_due(p) if amount_units is None else amount_units
    return pay(chain.w3, to=p["address"], amount_base_units=amount, token_contract=chain.tokens["USDC"], sender=sender)
