"""An outage is not a message's fault (DESIGN §1): while the database is unreachable, for
however long, the consumers wait with their messages instead of spending their attempts;
once it is back every message is handled and nothing sits in a dead-letter queue.

The database here is a private PostgreSQL that the test starts on its own port and data
directory and crashes by pid (never the machine's shared server); the queues are a private
topology whose retry delay is short, so an outage can outlast the whole retry budget in
seconds.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys, merchants
from kassa_common.config import Settings
from kassa_common.db import ensure_database, make_engine, make_session_factory, unit_of_work
from kassa_common.messaging import topology
from kassa_common.messaging.consumer import Consumer
from kassa_common.messaging.publisher import Publisher
from kassa_common.migrate import upgrade
from kassa_common.models import Event, Payment
from kassa_common.statuses import TransferStatus
from kassa_dev.instances import PrivatePostgres
from kassa_settler.main import handle_transfer
from kassa_webhook_sender.webhooks.intake import handle_event
from tests.support.api import API, LIVE_PAYMENT, PAYMENT, assert_error, set_live_wallet
from tests.support.bus import private_topology, queue_depth
from tests.support.transfers import report
from tests.support.wait import until

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("outages")]
RETRY_DELAY_MS = 100
BUDGET_SECONDS = topology.MAX_ATTEMPTS * RETRY_DELAY_MS / 1000  # a message's whole retry budget
OUTAGE_SECONDS = 4 * BUDGET_SECONDS + 2


@pytest.fixture(scope="module")
def pg():
    server = PrivatePostgres(max_connections=50).start()
    yield server
    server.remove()


@pytest.fixture(scope="module")
def private(pg, base_env):
    """Settings, sessions and an API client on a fresh database of the private server."""
    from kassa_api.app import create_app

    url = pg.url("kassa_outages")
    ensure_database(url)
    upgrade(url)
    settings = Settings.from_env({**base_env, "DATABASE_URL": url})
    engine = make_engine(url, pool_size=4)
    yield settings, make_session_factory(engine), create_app(settings, engine=engine).test_client()
    engine.dispose()


@pytest.fixture
def bus(base_env):
    with private_topology(base_env["RABBITMQ_URL"], retry_delay_ms=RETRY_DELAY_MS) as (_prefix, topo):
        yield topo


def start(consumer: Consumer) -> threading.Thread:
    thread = threading.Thread(target=consumer.run, daemon=True)
    thread.start()
    return thread


def live_payments(private, n: int) -> list[dict]:
    _settings, sessions, client = private
    with unit_of_work(sessions) as s:
        merchant = merchants.create_merchant(s, f"m-{uuid.uuid4().hex[:8]}@example.com", None, "Acme", True)
        key = keys.create_key(s, merchant.id, "live", list(keys.SCOPES)).key
    set_live_wallet(sessions, merchant.id)
    out = []
    for _ in range(n):
        r = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers={"X-Api-Key": key})
        assert r.status_code == 201, r.get_data(as_text=True)
        out.append(r.get_json()["data"])
    return out


def statuses(sessions, ids: list[str]) -> dict[str, int]:
    with sessions() as s:
        rows = s.execute(
            sa.select(Payment.status, sa.func.count())
            .where(Payment.id.in_([uuid.UUID(i) for i in ids]))
            .group_by(Payment.status)
        ).all()
    return {str(status): n for status, n in rows}


def test_transfers_arriving_during_a_database_outage_longer_than_the_retry_budget_all_settle(
    pg, private, bus, base_env
):
    _settings, sessions, _client = private
    rabbit = base_env["RABBITMQ_URL"]
    paid = live_payments(private, 8)
    settler = Consumer(rabbit, bus, bus.settler, handle_transfer, sessions, name="kassa-test-settler")
    thread = start(settler)
    publisher = Publisher(rabbit, bus.exchange, name="kassa-test-watcher")
    try:
        # Given the database crashes
        pg.kill()
        # When confirmed transfers to every payment arrive while it is down, for longer than
        # the messages' whole retry budget
        publisher.publish_batch(report(p, TransferStatus.CONFIRMED, 12_340_000, 2).to_message() for p in paid)
        until(settler.paused.is_set, timeout=20, message="the settler to pause")
        time.sleep(OUTAGE_SECONDS)  # the outage itself: it has to last
        # Then nothing was parked meanwhile
        assert queue_depth(rabbit, bus.settler.dlq) == 0
        # And once the database is back, every payment completes and the DLQ stays empty
        pg.start()
        until(
            lambda: statuses(sessions, [p["id"] for p in paid]) == {"COMPLETED": len(paid)},
            timeout=60,
            message="every payment to complete",
        )
        assert queue_depth(rabbit, bus.settler.dlq) == 0
        assert queue_depth(rabbit, bus.settler.retry) == 0
        with sessions() as s:
            completed = s.scalar(
                sa.select(sa.func.count())
                .select_from(Event)
                .where(Event.payment_id.in_([uuid.UUID(p["id"]) for p in paid]), Event.type == "payment.completed")
            )
        assert completed == len(paid)  # each exactly once
    finally:
        publisher.close()
        settler.stop()
        thread.join(30)
        if not pg.running:
            pg.start()


def test_payment_events_arriving_during_a_database_outage_all_become_deliveries(pg, private, bus, base_env):
    _settings, sessions, client = private
    rabbit = base_env["RABBITMQ_URL"]
    with unit_of_work(sessions) as s:
        merchant = merchants.create_merchant(s, f"m-{uuid.uuid4().hex[:8]}@example.com", None, "Acme", True)
        key = keys.create_key(s, merchant.id, "test", list(keys.SCOPES)).key
    r = client.post(f"{API}/webhooks", json={"url": "http://127.0.0.1:9/hook"}, headers={"X-Api-Key": key})
    assert r.status_code == 201
    created = [
        client.post(
            f"{API}/payments", json={"amount": 5, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key}
        ).get_json()["data"]["id"]
        for _ in range(5)
    ]
    with sessions() as s:
        events = s.scalars(sa.select(Event).where(Event.payment_id.in_([uuid.UUID(i) for i in created]))).all()
    handed_over: list = []
    intake = Consumer(
        rabbit,
        bus,
        bus.webhook_intake,
        handle_event,
        sessions,
        name="kassa-test-intake",
        on_committed=handed_over.extend,
    )
    thread = start(intake)
    publisher = Publisher(rabbit, bus.exchange, name="kassa-test-relay")
    try:
        pg.kill()
        from kassa_common.messaging.publisher import Message

        publisher.publish_batch(Message(e.id, e.type, e.payload) for e in events)
        until(intake.paused.is_set, timeout=20, message="the intake to pause")
        time.sleep(OUTAGE_SECONDS)
        assert queue_depth(rabbit, bus.webhook_intake.dlq) == 0
        pg.start()
        until(lambda: len(handed_over) == len(events), timeout=60, message="a delivery per event")
        assert queue_depth(rabbit, bus.webhook_intake.dlq) == 0
    finally:
        publisher.close()
        intake.stop()
        thread.join(30)
        if not pg.running:
            pg.start()


@pytest.fixture
def web(private):
    """The API as a web process builds it: its own engine, no ping on each checkout."""
    from kassa_api.app import create_app

    settings, sessions, _client = private
    app = create_app(settings)
    with unit_of_work(sessions) as s:
        merchant = merchants.create_merchant(s, f"m-{uuid.uuid4().hex[:8]}@example.com", None, "Acme", True)
        key = keys.create_key(s, merchant.id, "test", list(keys.SCOPES)).key
    yield app.test_client(), {"X-Api-Key": key}
    app.extensions["kassa"].engine.dispose()


def test_the_first_payment_after_a_database_restart_is_created(pg, web):
    client, headers = web
    assert (
        client.post(f"{API}/payments", json=PAYMENT, headers=headers).status_code == 201
    )  # the pool holds a connection
    # Given the database restarts while that connection sits in the pool
    pg.kill()
    pg.start()
    # When the next payment is created, Then it is: the connection the restart closed is
    # replaced when it is checked out instead of failing the request
    r = client.post(f"{API}/payments", json=PAYMENT, headers=headers)
    assert r.status_code == 201, r.get_data(as_text=True)


def test_while_the_database_is_down_the_api_answers_503_at_once_and_creates_again_once_it_is_back(pg, web):
    client, headers = web
    assert client.post(f"{API}/payments", json=PAYMENT, headers=headers).status_code == 201
    pg.kill()
    try:
        started = time.monotonic()
        r = client.post(f"{API}/payments", json=PAYMENT, headers=headers)
        assert_error(r, 503, "SERVICE_UNAVAILABLE")
        assert int(r.headers["Retry-After"]) > 0
        assert time.monotonic() - started < 10  # an answer, not a hang
    finally:
        pg.start()
    r = client.post(f"{API}/payments", json=PAYMENT, headers=headers)
    assert r.status_code == 201, r.get_data(as_text=True)
