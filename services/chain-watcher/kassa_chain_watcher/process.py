"""The chain watcher process: one ``NetworkWatcher`` thread per network with an RPC node
configured (each active only while it holds that network's lock), and the payment feed
that tells them, as payments are created, which addresses to watch.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from functools import partial

from kassa_common.chains.networks import Network
from kassa_common.config import Settings, WatcherSettings
from kassa_common.worker import Worker
from kassa_chain_watcher.network_watcher import NetworkWatcher, make_watchlist
from kassa_chain_watcher.watchlist import PaymentFeed

log = logging.getLogger("kassa.chain_watcher")
FEED_WAIT_SECONDS = 10.0


def watched(settings: Settings) -> list[Network]:
    """The networks to follow: those with an RPC URL, narrowed to ``CHAIN_WATCHER_NETWORKS`` if set."""
    names = settings.watcher.networks
    return [n for n in settings.networks if n.rpc_url and (not names or n.name.upper() in names)]


class WatcherProcess:
    def __init__(self, worker: Worker, networks: list[Network], options: WatcherSettings) -> None:
        self.watchlists = {n.name.upper(): make_watchlist(n) for n in networks}
        self.watchers = [
            NetworkWatcher(
                worker.settings,
                n,
                worker.sessions,
                self.watchlists[n.name.upper()],
                options,
                publisher=partial(worker.publisher, n.name.lower()),
            )
            for n in networks
        ]
        feed = PaymentFeed(self.watchlists, evm_networks=[n.name for n in worker.settings.networks if n.kind == "evm"])
        self.feed = feed.consumer(worker.consumer, worker.topology, f"{socket.gethostname()}-{os.getpid()}")
        self._stopped = threading.Event()

    def run(self) -> None:
        if not self.watchers:
            log.warning("no network has an RPC URL configured; nothing to watch")
        feed = threading.Thread(target=self.feed.run, name="payment-feed", daemon=True)
        feed.start()
        # Subscribed before a watcher first reads the addresses: no payment falls in between
        # (with the broker away, the watchers start all the same and the reloads cover).
        if not self.feed.consuming.wait(FEED_WAIT_SECONDS):
            log.warning("the payment feed is not consuming yet; new addresses wait for the next reload")
        threads = [threading.Thread(target=w.run, name=f"watch-{w.network.name}", daemon=True) for w in self.watchers]
        for t in threads:
            t.start()
        self._stopped.wait()
        for t in threads:
            t.join(10)
        self.feed.stop()
        feed.join(10)

    def stop(self) -> None:
        for w in self.watchers:
            w.stop()
        self._stopped.set()
