"""The chain watcher process: one thread per network with an RPC URL configured, each
active only while it holds that network's advisory lock (others stand by).

Watcher-only knobs (read here, in the entrypoint): ``CHAIN_WATCHER_NETWORKS`` (comma-separated
names; default every network with an RPC URL), ``CHAIN_WATCHER_POLL_SECONDS``,
``CHAIN_WATCHER_BATCH_BLOCKS``, ``CHAIN_WATCHER_RELOAD_SECONDS``.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

from kassa_common.bus import topology
from kassa_common.bus.publisher import Publisher
from kassa_common.chains.networks import Network
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.worker import run_until_stopped, setup_logging, start_metrics

from kassa_chain_watcher import bitcoin, evm
from kassa_chain_watcher.lock import NetworkLock
from kassa_chain_watcher.rpc import JsonRpc
from kassa_chain_watcher.scanner import Scanner
from kassa_chain_watcher.store import Store
from kassa_chain_watcher.watchlist import PaymentFeed, Watchlist, reload

log = logging.getLogger("kassa.chain_watcher")


@dataclass(frozen=True)
class Options:
    poll_seconds: float | None = None  # default: a quarter of the block time, 0.1..2 s
    batch_blocks: int = 500
    reload_seconds: float = 30.0
    standby_seconds: float = 1.0

    @classmethod
    def from_env(cls, env=None) -> "Options":
        env = os.environ if env is None else env
        poll = env.get("CHAIN_WATCHER_POLL_SECONDS")
        return cls(poll_seconds=float(poll) if poll else None,
                   batch_blocks=int(env.get("CHAIN_WATCHER_BATCH_BLOCKS") or 500),
                   reload_seconds=float(env.get("CHAIN_WATCHER_RELOAD_SECONDS") or 30))


def make_chain(network: Network):
    if network.kind == "evm":
        return evm.EvmChain(network, JsonRpc(network.rpc_url)), evm.normalize
    return bitcoin.BitcoinChain(network, JsonRpc(network.rpc_url, version="1.0")), bitcoin.normalize


def keep_blocks(network: Network) -> int:
    return network.required_confirmations + 24


class NetworkWatcher:
    """Follows one network while holding its lock; ``active`` tells whether it does now."""

    def __init__(self, settings: Settings, network: Network, sessions, watchlist: Watchlist,
                 options: Options = Options()) -> None:
        self.settings, self.network, self.sessions, self.watchlist = settings, network, sessions, watchlist
        self.options = options
        self.lock = NetworkLock(settings.database_url, network.name)
        self.active = threading.Event()
        self.stopping = threading.Event()
        self.scanner: Scanner | None = None
        poll = options.poll_seconds or network.block_time / 4
        self.poll = min(2.0, max(0.1, poll)) if options.poll_seconds is None else options.poll_seconds

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                if self.lock.try_acquire():
                    self._follow()
            except Exception:  # noqa: BLE001 - database or node trouble: stand by and retry
                log.exception("%s: watcher failed; retrying", self.network.name)
            finally:
                self.active.clear()
                self.lock.release()
            self.stopping.wait(self.options.standby_seconds)

    def stop(self) -> None:
        self.stopping.set()
        self.watchlist.changed.set()

    def _follow(self) -> None:
        topo = topology.named(self.settings.bus_prefix)
        publisher = Publisher(self.settings.rabbitmq_url, topo.exchange, declare=topo.declare,
                              name=f"kassa-chain-watcher-{self.network.name.lower()}")
        chain, _ = make_chain(self.network)
        try:
            reload(self.watchlist, self.sessions, self.network.name, initial=True)
            store = Store(self.sessions, self.network.name, keep_blocks(self.network))
            self.scanner = Scanner(self.network, chain, store, self.watchlist, publisher.publish_batch,
                                   batch_blocks=self.options.batch_blocks)
            log.info("%s: active, following from block %s with %d watched addresses", self.network.name,
                     self.scanner.state.head, len(self.watchlist))
            self.active.set()
            self._loop()
        finally:
            publisher.close()
            chain.close()

    def _loop(self) -> None:
        next_reload = time.monotonic() + self.options.reload_seconds
        while not self.stopping.is_set() and self.lock.still_held():
            try:
                if time.monotonic() >= next_reload:
                    reload(self.watchlist, self.sessions, self.network.name)
                    next_reload = time.monotonic() + self.options.reload_seconds
                busy = self.scanner.tick()
            except Exception:  # noqa: BLE001 - node or broker trouble: keep the lock, retry soon
                log.exception("%s: scan failed; retrying", self.network.name)
                self.stopping.wait(min(2.0, self.poll * 4))
                continue
            if not busy:
                self.watchlist.changed.wait(self.poll)
                self.watchlist.changed.clear()


class WatcherProcess:
    def __init__(self, settings: Settings, options: Options, names: list[str] | None = None) -> None:
        networks = [n for n in settings.networks if n.rpc_url and (not names or n.name.upper() in names)]
        engine = make_engine(settings.database_url, pool_size=max(2, len(networks)), application_name="kassa-chain-watcher")
        sessions = make_session_factory(engine)
        self.watchlists = {n.name.upper(): Watchlist((evm if n.kind == "evm" else bitcoin).normalize)
                           for n in networks}
        self.watchers = [NetworkWatcher(settings, n, sessions, self.watchlists[n.name.upper()], options)
                         for n in networks]
        topo = topology.named(settings.bus_prefix)
        self.feed = PaymentFeed(settings.rabbitmq_url, topo.exchange, self.watchlists, name="kassa-chain-watcher-feed")
        self._stopped = threading.Event()

    def run(self) -> None:
        if not self.watchers:
            log.warning("no network has an RPC URL configured; nothing to watch")
        self.feed.start()
        threads = [threading.Thread(target=w.run, name=f"watch-{w.network.name}", daemon=True) for w in self.watchers]
        for t in threads:
            t.start()
        self._stopped.wait()
        for t in threads:
            t.join(10)
        self.feed.stop()

    def stop(self) -> None:
        for w in self.watchers:
            w.stop()
        self._stopped.set()


def main() -> None:
    settings = Settings.from_env()
    setup_logging(settings.log_level, "chain-watcher")
    start_metrics(settings)
    names = [n.strip().upper() for n in os.environ.get("CHAIN_WATCHER_NETWORKS", "").split(",") if n.strip()]
    process = WatcherProcess(settings, Options.from_env(), names)
    run_until_stopped(process.run, process.stop)


if __name__ == "__main__":
    main()
