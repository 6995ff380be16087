"""The sweeper process: every ``SWEEP_INTERVAL_SECONDS``, one step per sweepable network
(``engine.NetworkSweeper``): follow the sweep in flight or send the next batch.

Without ``SWEEPER_PRIVATE_KEY`` it idles and says so (a server with no forwarder merchant
needs no key); without a sweepable network likewise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from kassa_common.bootstrap import bootstrap
from kassa_common.config import Settings, SweeperSettings
from kassa_common.pricing.service import make_rates
from kassa_common.worker import Worker
from kassa_sweeper import configured
from kassa_sweeper.chain import DepositChain, web3_for
from kassa_sweeper.engine import NetworkSweeper

log = logging.getLogger("kassa.sweeper")


def sweepers(worker: Worker, options: SweeperSettings) -> list[NetworkSweeper]:
    """One sweeper per sweepable network, sharing the key, the rates and the database."""
    signer, rates = configured.signer(options), make_rates(worker.settings)
    if signer is None:
        return []
    return [
        NetworkSweeper(
            n,
            worker.sessions,
            DepositChain(n, web3_for(n)),
            signer,
            rates,
            policy=configured.policy(options),
            batch_size=options.batch_size,
            replace_after=timedelta(seconds=options.replace_seconds),
            cap_usd=options.max_spend_usd_per_hour,
        )
        for n in configured.sweepable(options, worker.settings)
    ]


def tick_all(each: list[NetworkSweeper]) -> Callable[[], bool]:
    """One step per network; True when any of them moved on (then the next comes at once)."""

    def tick() -> bool:
        progressed = False
        for sweeper in each:
            try:
                progressed |= sweeper.tick().progressed
            except Exception as exc:  # noqa: BLE001 - a node or database hiccup: that network waits a turn
                log.error("%s: sweep step failed: %s", sweeper.network.name, sweeper.safe(exc))
        return progressed

    return tick


def main() -> None:
    settings = Settings.from_env()
    options = configured.checked(settings)
    worker = bootstrap(settings, "sweeper")
    each = sweepers(worker, options)
    signer = configured.signer(options)
    if signer is None:
        log.warning("SWEEPER_PRIVATE_KEY is not set: forwarder deposits are not swept")
    elif not each:
        log.warning("no EVM network has an RPC URL and a forwarder factory: nothing to sweep")
    else:
        log.info("sweeping %s with %s", ", ".join(s.network.name for s in each), signer.address)
    worker.poll(tick_all(each), interval=options.interval_seconds)


if __name__ == "__main__":
    main()
