"""The settler: consumes ``chain.transfer.*`` and applies them to payments."""
from __future__ import annotations

from prometheus_client import Counter
from sqlalchemy.orm import Session

from kassa_common.bus.consumer import Delivered, Reject
from kassa_common.config import Settings
from kassa_common.messages import TransferReport
from kassa_common.payments import settle
from kassa_common.worker import bootstrap

SETTLED = Counter("kassa_settler_transfers_total", "Transfer reports applied", ["kind"])


def handle_transfer(session: Session, msg: Delivered) -> None:
    try:
        report = TransferReport.from_message(msg.routing_key, msg.body)
    except (KeyError, ValueError, TypeError) as exc:
        raise Reject(f"malformed transfer report: {exc!r}") from None
    settle(session, report)
    SETTLED.labels(report.status).inc()


def main() -> None:
    worker = bootstrap(Settings.from_env(), "settler")
    worker.consume(worker.topology.settler, handle_transfer)


if __name__ == "__main__":
    main()
