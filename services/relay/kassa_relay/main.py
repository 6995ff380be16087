"""The outbox relay process: publishes committed events to RabbitMQ, the only process that
does; woken at once by the settler's NOTIFY (``kassa_common.messaging.relay``)."""

from __future__ import annotations

from kassa_common.bootstrap import bootstrap
from kassa_common.config import Settings
from kassa_common.messaging.relay import relay_process


def main() -> None:
    worker = bootstrap(Settings.from_env(), "relay", pool_size=3)  # the relay's, the listener's, a spare
    publisher = worker.publisher()
    worker.until_stopped(lambda stop: relay_process(worker.engine, worker.sessions, publisher, stop))


if __name__ == "__main__":
    main()
