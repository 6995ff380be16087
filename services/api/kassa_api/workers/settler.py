"""The settler: consumes ``chain.transfer.*`` and applies them to payments."""
from __future__ import annotations

from prometheus_client import Counter
from sqlalchemy.orm import Session

from kassa_common.bus import topology
from kassa_common.bus.consumer import Consumer, Delivered, Reject
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.settlement import TransferReport, settle
from kassa_common.worker import run_until_stopped, setup_logging, start_metrics

SETTLED = Counter("kassa_settler_transfers_total", "Transfer reports applied", ["kind"])


def handle_transfer(session: Session, msg: Delivered) -> None:
    try:
        report = TransferReport.from_message(msg.routing_key, msg.body)
    except (KeyError, ValueError, TypeError) as exc:
        raise Reject(f"malformed transfer report: {exc!r}") from None
    settle(session, report)
    SETTLED.labels(report.kind).inc()


def build_consumer(settings: Settings) -> Consumer:
    engine = make_engine(settings.database_url, pool_size=2, application_name="kassa-settler")
    topo = topology.named(settings.bus_prefix)
    return Consumer(settings.rabbitmq_url, topo, topo.settler, handle_transfer, make_session_factory(engine),
                    name="kassa-settler")


def main() -> None:
    settings = Settings.from_env()
    setup_logging(settings.log_level, "settler")
    start_metrics(settings)
    consumer = build_consumer(settings)
    run_until_stopped(consumer.run, consumer.stop)


if __name__ == "__main__":
    main()
