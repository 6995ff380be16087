"""The outbox relay process: publishes committed events to RabbitMQ."""
from __future__ import annotations

import threading

from kassa_common.bus import topology
from kassa_common.bus.publisher import Publisher
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.outbox import run_relay
from kassa_common.worker import run_until_stopped, setup_logging, start_metrics


def main() -> None:
    settings = Settings.from_env()
    setup_logging(settings.log_level, "relay")
    start_metrics(settings)
    topo = topology.named(settings.bus_prefix)
    publisher = Publisher(settings.rabbitmq_url, topo.exchange, name="kassa-relay", declare=topo.declare)
    engine = make_engine(settings.database_url, pool_size=2, application_name="kassa-relay")
    stop = threading.Event()
    run_until_stopped(lambda: run_relay(make_session_factory(engine), publisher, stop), stop.set)


if __name__ == "__main__":
    main()
