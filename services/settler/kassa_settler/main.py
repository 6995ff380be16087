"""The settler: consumes ``chain.transfer.*`` (and test mode's ``test.transfer.*``) and
applies each where it belongs (``apply_transfer``): a transfer to a payment's address to the
payment (``payments.settle``), any other to the claimed refund it may pay
(``refunds.payouts.apply_report``; the watchers watch those addresses too). The decision is
made here, once: the payment package never looks at refunds.

The events a batch of reports writes (payment.completed …) are published by the relay
process, which the settler wakes (``wake_relay``: a NOTIFY) as soon as the batch commits:
a webhook never waits for the relay's poll.
Batches are small (``BATCH``): a payment settled first in a batch waits for the rest of it
before its event can leave, and a block confirms many payments at once. ``SETTLER_CONSUMERS``
consumers (default 2) take turns at the queue in threads of one process: a report spends
about half its time waiting for PostgreSQL, which another consumer fills with its own work.
Reports may then be settled out of order, which settlement is built for (a confirmed
transfer is final; the payment's row lock orders the changes). The watchers' watermarks
(``chain.watermark``) come through the same queue and move a network's settled line only
once every report before them is applied, whatever the order (``payments.watermark``).
A report that loses a payment confirmed funds in a deep reorg also flags the payment's open
refunds (``refunds.reorgs``), in the same transaction.
Rates (funds after a payment's rate lock, or confirmed after their rate's hold) come from
the rate service's cache only: a batch's transaction holds payment rows and asks no source.
A rate the cache lacks rolls the batch back; the consumer fetches it with no transaction
open and settles the batch again (``errors.Unprepared``, ``pricing.arrival``).
"""

from __future__ import annotations

import logging
from functools import partial

from prometheus_client import Counter
from sqlalchemy.orm import Session

from kassa_common.bootstrap import bootstrap
from kassa_common.config import Settings
from kassa_common.messaging import topology as bus_topology
from kassa_common.messaging.consumer import Consumer, Delivered, Reject
from kassa_common.messaging.messages import ChainWatermark, RoutingKey, TransferReport
from kassa_common.messaging.relay import wake_relay
from kassa_common.messaging.topology import Topology
from kassa_common.payments.settle import lock_for_reports, payment_at, settle
from kassa_common.payments.watermark import apply_watermark
from kassa_common.pricing.service import RateService, make_rates
from kassa_common.refunds.payouts import apply_report
from kassa_common.refunds.reorgs import flag_funds_reorged
from kassa_common.worker import run_together

BATCH = 10  # reports per transaction: ~10 commits saved per 10, ~30 ms of waiting at most
SETTLED = Counter("kassa_settler_transfers_total", "Transfer reports applied", ["kind"])
log = logging.getLogger("kassa.settlement")


def lock_reported(session: Session, msgs: list[Delivered]) -> None:
    """Before a batch: lock the payments its reports pay, and their transfers, at once."""
    reports = []
    for msg in msgs:
        try:
            reports.append(TransferReport.from_message(msg.routing_key, msg.body))
        except (KeyError, ValueError, TypeError):
            pass  # handle_transfer rejects it
    lock_for_reports(session, reports)


def handle_transfer(
    session: Session, msg: Delivered, *, consumer: str = bus_topology.SETTLER.name, rates: RateService | None = None
) -> None:
    """A transfer report, or a watcher's watermark; ``consumer``: the queue this runs for (its
    processed messages are those a watermark checks); ``rates``: values funds arriving after a
    payment's rate lock."""
    if msg.routing_key == RoutingKey.CHAIN_WATERMARK:
        try:
            watermark = ChainWatermark.from_message(msg.routing_key, msg.body)
        except (KeyError, ValueError, TypeError) as exc:
            raise Reject(f"malformed watermark: {exc!r}") from None
        apply_watermark(session, watermark, consumer)
        return
    try:
        report = TransferReport.from_message(msg.routing_key, msg.body)
    except (KeyError, ValueError, TypeError) as exc:
        raise Reject(f"malformed transfer report: {exc!r}") from None
    apply_transfer(session, report, rates)
    SETTLED.labels(report.status).inc()


def apply_transfer(session: Session, report: TransferReport, rates: RateService | None = None) -> None:
    """One transfer report, where it belongs: to a payment's address (held by the batch's
    ``lock_for_reports``, else read) it is the payment's (``payments.settle``; a deep reorg of
    its confirmed funds also flags the payment's open refunds on that network); to any other
    address it may be a claimed refund's payout (``refunds.payouts.apply_report``). A
    zero-value transfer (anyone can send one to any address) is neither's."""
    what = (report.tx_hash, report.log_index, report.to)
    if report.amount_units <= 0:
        log.info("zero-value transfer %s:%s to %s ignored", *what)
        return
    if payment_at(session, report.to) is None:
        if apply_report(session, report) is None:
            log.info("transfer %s:%s to %s matches no payment and no refund", *what)
        return
    lost = settle(session, report, rates)
    if lost is not None:  # a deep reorg took confirmed funds of this payment
        flag_funds_reorged(session, lost, report.network)


def transfer_handler(queue_name: str, rates: RateService | None = None):
    """``handle_transfer`` for the consumers of queue ``queue_name``."""
    return partial(handle_transfer, consumer=queue_name, rates=rates)


def settler_consumers(make, topology: Topology, n: int, rates: RateService | None = None, **hooks) -> list[Consumer]:
    """``n`` consumers of the chain's reports and one of test mode's simulated ones, which
    wait in a queue of their own: a tester completing a thousand payments at once never
    holds up a live confirmation. ``make`` builds a consumer (``Worker.consumer``)."""
    queues = [topology.settler] * n + [topology.settler_test]
    return [
        make(q, transfer_handler(q.name, rates), batch=BATCH, prefetch=2 * BATCH, prepare=lock_reported, **hooks)
        for q in queues
    ]


def main() -> None:
    settings = Settings.from_env()
    n = settings.settler.consumers
    worker = bootstrap(settings, "settler", pool_size=n + 2)
    consumers = settler_consumers(
        worker.consumer, worker.topology, n, make_rates(settings), after_commit=partial(wake_relay, worker.engine)
    )

    def stop() -> None:
        for c in consumers:
            c.stop()

    worker.run(lambda: run_together(c.run for c in consumers), stop)


if __name__ == "__main__":
    main()
