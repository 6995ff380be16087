"""Following one network: ``NetworkWatcher`` scans it while it holds the network's advisory
lock (another process's watcher stands by meanwhile), and the readers it scans through.

An EVM network with a WebSocket endpoint (``<NETWORK>_WS_URL``; a development chain's by
default) learns new blocks from the node's ``newHeads`` subscription (``heads.py``), which
wakes the scanner at once; the poll is then only a safety net, every block time (at most
``SAFETY_POLL_SECONDS``), and takes over at its usual pace while the subscription is down.

Each network is read through its pool of nodes (``nodes.NodePool``: ``<NETWORK>_RPC_URLS``,
failover, each node's chain checked before it serves), cross-checked by other nodes when
``<NETWORK>_RPC_QUORUM`` asks for it (``quorum.Quorum``).

A failing scan (every node down or rate limiting us, the broker or database away) is tried
again after a jittered exponential backoff (``transient.Backoff``, up to 30 s, at least
what a node's ``Retry-After`` asked for), never in a tight loop on the same range; the
backoff resets on the first good tick. Each streak of failures is logged once (and once
more if the failure changes kind), with the RPC URL redacted (hosted nodes' URLs hold
their API key); a node that is merely unavailable gets no stack trace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial

from kassa_common.chains.locks import NetworkLock
from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcUnavailable
from kassa_common.config import Settings, WatcherSettings
from kassa_common.messaging import topology
from kassa_common.messaging.publisher import Publisher
from kassa_common.transient import Backoff
from kassa_chain_watcher import bitcoin, evm
from kassa_chain_watcher.heads import HeadSubscription
from kassa_chain_watcher.quorum import Quorum
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.store import Store
from kassa_chain_watcher.watchlist import Watchlist, address_networks, reload

log = logging.getLogger("kassa.chain_watcher")
RESTART_SLACK = timedelta(seconds=60)  # beyond the reload period: a feed or a scan running late
SAFETY_POLL_SECONDS = 5.0  # the longest poll while new heads are pushed  # pragma: no mutate


def default_poll(block_time: float) -> float:
    """How often the tip is asked for: a tenth of the block time, 0.05..2 s. A new block waits
    on average half of it before it is read, and that wait is part of every payment's
    confirmation-to-webhook time; one ``eth_blockNumber`` per poll is cheap."""
    return min(2.0, max(0.05, block_time / 10))


def chain_on(network: Network, rpc):
    """The chain reader of ``network`` over ``rpc`` (a node pool, or one node of it)."""
    return evm.EvmChain(network, rpc) if network.kind == "evm" else bitcoin.BitcoinChain(network, rpc)


def make_chain(network: Network):
    """The reader of ``network`` over its pool of nodes, and the quorum cross-checking it (or None)."""
    pool = NodePool(network, version="2.0" if network.kind == "evm" else "1.0")
    quorum = Quorum(network, pool, partial(chain_on, network)) if network.rpc_quorum > 1 else None
    return chain_on(network, pool), quorum


def make_watchlist(network: Network) -> Watchlist:
    """An empty watchlist for ``network``; an EVM one also follows its open native-coin payments."""
    if network.kind != "evm":
        return Watchlist(bitcoin.normalize)
    native = next((t.symbol for t in network.tokens if t.native), None)
    return Watchlist(evm.normalize, coin=(network.name, native) if native else None)


def keep_blocks(network: Network) -> int:
    return network.required_confirmations + 24


class NetworkWatcher:
    """Follows one network while holding its lock; ``active`` tells whether it does now."""

    def __init__(
        self,
        settings: Settings,
        network: Network,
        sessions,
        watchlist: Watchlist,
        options: WatcherSettings | None = None,
        *,
        publisher: Callable[[], Publisher] | None = None,
    ) -> None:
        self.settings, self.network, self.sessions, self.watchlist = settings, network, sessions, watchlist
        self.options = options = options or WatcherSettings()  # the defaults: Settings.watcher's
        self.publisher = publisher or self._default_publisher
        self.lock = NetworkLock(settings.database_url, network.name)
        self.address_networks = address_networks(network, settings.networks)  # its own, and wrong-network ones
        self.active = threading.Event()
        self.stopping = threading.Event()
        self.scanner: Scanner | None = None
        self.poll = options.poll_seconds or default_poll(network.block_time)
        self.safety_poll = max(self.poll, min(network.block_time, SAFETY_POLL_SECONDS))  # while heads are pushed
        self.heads: HeadSubscription | None = None

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if self.lock.try_acquire():
                    self._follow()
            except Exception:
                log.exception("%s: watcher failed; retrying", self.network.name)
            finally:
                self.active.clear()
                self.lock.release()
            self.stopping.wait(self.options.standby_seconds)

    def stop(self) -> None:
        self.stopping.set()
        self.watchlist.changed.set()

    def _default_publisher(self) -> Publisher:
        """In-process use (tests): the process passes its worker's publisher factory instead."""
        topo = topology.named(self.settings.bus_prefix)
        return Publisher(
            self.settings.rabbitmq_url,
            topo.exchange,
            declare=topo.declare,
            name=f"kassa-chain-watcher-{self.network.name.lower()}",
        )

    def _follow(self) -> None:
        publisher = self.publisher()
        chain, quorum = make_chain(self.network)
        try:
            reload(self.watchlist, self.sessions, self.address_networks, initial=True)
            store = Store(self.sessions, self.network.name, keep_blocks(self.network))
            self.scanner = Scanner(
                self.network,
                chain,
                store,
                self.watchlist,
                publisher.publish_batch,
                batch_blocks=self.options.batch_blocks,
                quorum=quorum,
            )
            # Payments the last watcher may not have heard of before it stopped: backfilled first.
            recent = store.recent_addresses(
                self.address_networks, timedelta(seconds=self.options.reload_seconds) + RESTART_SLACK
            )
            self.watchlist.requeue({self.watchlist.normalize(a) for a in recent})
            log.info(
                "%s: active, following from block %s with %d watched addresses",
                self.network.name,
                self.scanner.state.head,
                len(self.watchlist),
            )
            if self.network.kind == "evm" and self.network.ws_url:
                # wakes the loop's wait (the watchlist's event: "look now")
                self.heads = HeadSubscription(self.network.name, self.network.ws_url, self.watchlist.changed).start()
            self.active.set()
            self._loop()
        finally:
            if self.heads is not None:
                self.heads.stop()
                self.heads = None
            publisher.close()
            chain.close()

    def _loop(self) -> None:
        assert self.scanner is not None  # built by _follow
        next_reload = time.monotonic() + self.options.reload_seconds
        backoff = Backoff(initial=min(2.0, self.poll * 4))
        failing: str | None = None  # the kind of failure already logged in the current streak
        failures = 0
        while not self.stopping.is_set() and self.lock.still_held():
            try:
                if time.monotonic() >= next_reload:
                    reload(self.watchlist, self.sessions, self.address_networks)
                    next_reload = time.monotonic() + self.options.reload_seconds
                busy = self.scanner.tick()
            except Exception as exc:  # noqa: BLE001 - node or broker trouble: keep the lock, retry later
                failures += 1
                wait = backoff.next()
                if isinstance(exc, RpcUnavailable) and exc.retry_after:
                    wait = max(wait, exc.retry_after)
                failing = self._log_failure(exc, failing, wait)
                self.stopping.wait(wait)
                continue
            if failing is not None:
                log.info("%s: scanning again after %d failed attempt(s)", self.network.name, failures)
                failing, failures = None, 0
            backoff.reset()
            if not busy:
                pushed = self.heads is not None and self.heads.live.is_set()
                self.watchlist.changed.wait(self.safety_poll if pushed else self.poll)
                self.watchlist.changed.clear()

    def _log_failure(self, exc: Exception, failing: str | None, wait: float) -> str:
        """Log ``exc`` if it starts a streak of failures or changes its kind; the kind now."""
        kind = type(exc).__name__
        if kind == failing:
            log.debug("%s: scan failed again (%s); next try in %.1f s", self.network.name, exc, wait)
        elif isinstance(exc, RpcUnavailable):  # its text names nodes by their redacted URL only
            log.warning(
                "%s: RPC unavailable (%s); retrying with backoff, quietly until it answers", self.network.name, exc
            )
        else:
            log.exception("%s: scan failed; retrying with backoff", self.network.name)
        return kind
