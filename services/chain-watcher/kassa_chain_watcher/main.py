"""The chain watcher's entrypoint: settings, the networks it follows, the process, run
until SIGTERM. ``process.py`` runs a ``network_watcher.NetworkWatcher`` per network and the
payment feed.

Watcher-only knobs (``Settings.watcher``): ``CHAIN_WATCHER_NETWORKS`` (comma-separated
names; default every network with an RPC URL), ``CHAIN_WATCHER_POLL_SECONDS``,
``CHAIN_WATCHER_BATCH_BLOCKS``, ``CHAIN_WATCHER_RELOAD_SECONDS``.
"""

from __future__ import annotations

from kassa_common.bootstrap import bootstrap
from kassa_common.config import Settings
from kassa_chain_watcher.process import WatcherProcess, watched


def main() -> None:
    settings = Settings.from_env()
    networks = watched(settings)
    worker = bootstrap(settings, "chain-watcher", pool_size=len(networks) + 2)  # the scanners', the feed's, a spare
    process = WatcherProcess(worker, networks, settings.watcher)
    worker.run(process.run, process.stop)


if __name__ == "__main__":
    main()
