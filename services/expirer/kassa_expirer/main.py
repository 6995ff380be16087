"""The expirer process: expires overdue payments, completes test payments, republishes
outbox rows the relay left behind, and trims the consumers' processed-message log."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from kassa_common.bus import topology
from kassa_common.bus.publisher import Publisher
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.worker import loop, run_until_stopped, setup_logging, start_metrics
from kassa_expirer.jobs import Jobs

PURGE_EVERY = 3600.0


def build_jobs(settings: Settings) -> Jobs:
    engine = make_engine(settings.database_url, pool_size=2, application_name="kassa-expirer")
    topo = topology.named(settings.bus_prefix)
    publisher = Publisher(settings.rabbitmq_url, topo.exchange, name="kassa-expirer", declare=topo.declare)
    return Jobs(make_session_factory(engine), publisher, timedelta(seconds=settings.test_mode_complete_seconds))


def main() -> None:
    settings = Settings.from_env()
    setup_logging(settings.log_level, "expirer")
    start_metrics(settings)
    jobs = build_jobs(settings)
    stop = threading.Event()
    last_purge = [time.monotonic()]

    def tick() -> bool:
        if time.monotonic() - last_purge[0] > PURGE_EVERY:
            jobs.purge()
            last_purge[0] = time.monotonic()
        return jobs.tick()

    run_until_stopped(lambda: loop(tick, stop, interval=0.5), stop.set)


if __name__ == "__main__":
    main()
