"""The settled watermark (``payments.watermark``) on the real bus and settler: a watermark
moves a network's settled line only once every report published before it is applied,
whatever order the settler's consumers apply them in. Here a confirmed report fails until
the test lets it through (it goes round the retry queue), so the watermark published after
it is handled first: it must not move the line past the report it covers."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.messages import ChainWatermark
from kassa_common.messaging.publisher import Publisher
from kassa_common.models import ChainReport, ProcessedMessage
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from kassa_chain_watcher.store import Store
from kassa_settler import main as settler_module
from kassa_settler.main import settler_consumers
from tests.support.api import LIVE_PAYMENT
from tests.support.bus import consuming, private_topology
from tests.support.transfers import report
from tests.support.wait import until
from tests.support.watcher import reset_watcher_state

NETWORK = "LOCAL_EVM"


@pytest.fixture
def bus(settings):
    with private_topology(settings.rabbitmq_url, retry_delay_ms=500) as (_prefix, topo):
        publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
        yield topo, publisher
        publisher.close()


@pytest.fixture
def gate(monkeypatch):
    """Reports of transactions in ``gate.held`` fail (a retry each time) until ``gate.open``."""
    gate = threading.Event()
    gate.held = set()
    real = settler_module.settle

    def settle(session, r, *rates):
        if r.tx_hash in gate.held and not gate.is_set():
            raise RuntimeError("held back by the test")
        return real(session, r, *rates)

    monkeypatch.setattr(settler_module, "settle", settle)
    return gate


def settled_at(sessions):
    from kassa_common.models import SettledWatermark as Row

    with sessions() as s:
        return s.scalar(sa.select(Row.settled_at).where(Row.network == NETWORK))


def processed(sessions, consumer: str, message_id: str) -> bool:
    with sessions() as s:
        return s.get(ProcessedMessage, (consumer, message_id)) is not None


def status(client, merchant, p) -> str:
    return client.get(f"/v1/api/payments/{p['id']}", headers=merchant.headers("live")).get_json()["data"]["status"]


def test_a_watermark_waits_for_a_report_published_before_it_that_is_still_being_retried(
    settings, sessions, client, live_merchant, create_payment, bus, gate
):
    topo, publisher = bus
    reset_watcher_state(sessions, NETWORK)
    store = Store(sessions, NETWORK, keep=10)
    p = create_payment(live_merchant, LIVE_PAYMENT, mode="live")
    paid = report(p, TransferStatus.CONFIRMED, 12_340_000, 2)
    gate.held.add(paid.tx_hash)

    def make(queue, handler, **options):
        return Consumer(settings.rabbitmq_url, topo, queue, handler, sessions, name="test-settler", **options)

    with ExitStack() as running:
        for c in settler_consumers(make, topo, 2):  # two consumers of the chain's reports, side by side
            running.enter_context(consuming(c))
        # As the watcher does: the reports, recorded once confirmed by the broker, then a watermark.
        message = paid.to_message()
        publisher.publish_batch([message])
        through = store.record_reports([message.message_id])
        scanned = utcnow()
        first = ChainWatermark(NETWORK, through, scanned).to_message()
        publisher.publish_batch([first])

        until(lambda: processed(sessions, topo.settler.name, first.message_id), message="the watermark handled")
        assert settled_at(sessions) is None  # the report it covers is not applied yet
        assert status(client, live_merchant, p) == "PENDING"

        gate.set()  # the report gets through on its next attempt
        until(lambda: status(client, live_merchant, p) == "COMPLETED", message="the report applied")
        assert settled_at(sessions) is None  # nothing moves the line but a watermark

        again = ChainWatermark(NETWORK, through, scanned + timedelta(seconds=1)).to_message()
        older = ChainWatermark(NETWORK, through, scanned - timedelta(minutes=5)).to_message()
        publisher.publish_batch([again])
        until(lambda: settled_at(sessions) == scanned + timedelta(seconds=1), message="the settled line moved")
        publisher.publish_batch([older])
        until(lambda: processed(sessions, topo.settler.name, older.message_id), message="the older watermark handled")
        assert settled_at(sessions) == scanned + timedelta(seconds=1)  # never moves back
        with sessions() as s:
            assert (
                s.scalar(sa.select(sa.func.count()).select_from(ChainReport).where(ChainReport.network == NETWORK)) == 0
            )  # the ledger keeps only what waits
