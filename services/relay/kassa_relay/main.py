"""The outbox relay process: publishes committed events to RabbitMQ."""

from __future__ import annotations

from kassa_common.config import Settings
from kassa_common.messaging.relay import run_relay
from kassa_common.worker import bootstrap


def main() -> None:
    worker = bootstrap(Settings.from_env(), "relay")
    publisher = worker.publisher()
    worker.until_stopped(lambda stop: run_relay(worker.sessions, publisher, stop))


if __name__ == "__main__":
    main()
