"""The webhook sender against real PostgreSQL, real RabbitMQ (a private topology) and a
real HTTP receiver on 127.0.0.1: intake, signed delivery, retries, leases, refusals."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.consumer import Delivered
from kassa_common.models import DeliveryAttempt, WebhookEndpoint
from kassa_common.timefmt import utcnow
from kassa_common.webhooks.signing import SignatureError, compute, verify_signature
from kassa_webhook_sender.engine.dispatcher import Dispatcher
from kassa_webhook_sender.engine.retry import RetryPolicy
from kassa_webhook_sender.webhooks.channel import Webhooks
from kassa_webhook_sender.webhooks.intake import handle_event
from kassa_webhook_sender.webhooks.transport import Transport
from tests.support.api import API
from tests.support.bus import private_topology
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.statements import statements
from tests.support.wait import until
from tests.support.webhooks import (  # noqa: F401  (fixture)
    add_endpoint,
    add_event,
    attempts_of,
    count_settled,
    deliveries_of,
    delivery,
    dispatcher,
    intake,
    publish,
    running_sender,
    settled,
    webhook_dispatcher,
)

# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bus(settings):
    with private_topology(settings.rabbitmq_url) as (prefix, topo):
        yield prefix, topo


@pytest.fixture
def sender(settings, engine, bus):
    with running_sender(settings, engine, bus[0], threads=8) as s:
        yield s


# -- intake ---------------------------------------------------------------------------------


def test_intake_creates_a_delivery_only_for_subscribed_live_endpoints_of_the_same_merchant_and_mode(
    sessions, make_merchant
):
    m, other = make_merchant(), make_merchant()
    url = "https://hooks.example.com/x"
    everything = add_endpoint(sessions, m.id, url)
    completed_only = add_endpoint(sessions, m.id, url, events=["payment.completed"])
    add_endpoint(sessions, m.id, url, test_mode=False)
    add_endpoint(sessions, m.id, url, active=False)
    add_endpoint(sessions, m.id, url, deleted=True)
    add_endpoint(sessions, other.id, url)

    created = add_event(sessions, m.id, "payment.created")
    completed = add_event(sessions, m.id, "payment.completed")
    intake(sessions, created), intake(sessions, completed)

    assert {d.endpoint_id for d in deliveries_of(sessions, created.id)} == {everything.id}
    got = deliveries_of(sessions, completed.id)
    assert {d.endpoint_id for d in got} == {everything.id, completed_only.id}
    assert {(d.status, d.attempts, d.event_type) for d in got} == {("PENDING", 0, "payment.completed")}
    assert all(d.next_attempt_at is not None for d in got)


def test_intake_of_the_same_event_twice_creates_nothing_more(sessions, merchant):
    add_endpoint(sessions, merchant.id, "https://hooks.example.com/x")
    event = add_event(sessions, merchant.id)
    first, second = intake(sessions, event), intake(sessions, event)
    assert len(first) == 1 and second == []
    assert len(deliveries_of(sessions, event.id)) == 1


def test_events_taken_in_one_transaction_get_their_own_deliveries_from_one_insert(engine, sessions, merchant):
    everything = add_endpoint(sessions, merchant.id, "https://hooks.example.com/a")
    completed_only = add_endpoint(sessions, merchant.id, "https://hooks.example.com/b", events=["payment.completed"])
    events = [
        add_event(sessions, merchant.id, "payment.completed"),
        add_event(sessions, merchant.id, "payment.created"),
        add_event(sessions, merchant.id, "payment.completed"),
    ]

    def inserting(statement: str, _parameters) -> str | None:
        return statement if "INSERT INTO webhook_deliveries" in statement else None

    with statements(engine, inserting) as inserts, unit_of_work(sessions) as s:
        handed = [handle_event(s, Delivered(e.id, e.type, e.payload, 1)) for e in events]
        again = handle_event(s, Delivered("another-message", events[0].type, events[0].payload, 1))
        assert handed == [[], [], []] and inserts == []  # written when the transaction commits

    assert len(inserts) == 1 and again == []
    for event, ids in zip(events, handed, strict=True):
        assert sorted(ids) == sorted(d.id for d in deliveries_of(sessions, event.id))
    assert [len(ids) for ids in handed] == [2, 1, 2]
    assert {d.endpoint_id for d in deliveries_of(sessions, events[1].id)} == {everything.id}
    assert completed_only.id in {d.endpoint_id for d in deliveries_of(sessions, events[2].id)}


def test_intake_rolled_back_writes_no_delivery(sessions, merchant):
    add_endpoint(sessions, merchant.id, "https://hooks.example.com/x")
    event = add_event(sessions, merchant.id)
    with pytest.raises(RuntimeError), unit_of_work(sessions) as s:
        handle_event(s, Delivered(event.id, event.type, event.payload, 1))
        raise RuntimeError("a later message of the batch failed")
    assert deliveries_of(sessions, event.id) == []
    assert len(intake(sessions, event)) == 1  # taken in again later: created then


def test_a_burst_of_bus_events_is_delivered_once_each(settings, sessions, merchant, bus, sender, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    events = [add_event(sessions, merchant.id) for _ in range(120)]
    publish(settings, bus[1], *events)
    until(lambda: receiver.count() >= len(events), timeout=30, message="every webhook")
    assert sorted(h.headers["X-Kassa-Event-Id"] for h in receiver.all()) == sorted(e.id for e in events)
    ids = [d.id for e in events for d in deliveries_of(sessions, e.id)]
    until(lambda: count_settled(sessions, ids) == len(events), message="every outcome recorded")


def test_bus_events_become_deliveries_and_a_redelivered_message_adds_none(
    settings, sessions, merchant, bus, sender, receiver
):
    hook = add_endpoint(sessions, merchant.id, receiver.url)
    event = add_event(sessions, merchant.id)
    before = sender.consumer.handled
    publish(settings, bus[1], event, event)  # the same message id twice: a redelivery
    until(lambda: sender.consumer.handled >= before + 2, message="both messages consumed")
    [d] = deliveries_of(sessions, event.id)
    assert d.endpoint_id == hook.id
    until(settled(sessions, d.id), message="delivery sent")
    assert len(receiver.for_delivery(d.id)) == 1


# -- sending --------------------------------------------------------------------------------


def test_a_delivery_is_posted_with_a_signature_over_the_exact_bytes(
    settings, sessions, merchant, bus, sender, receiver
):
    hook = add_endpoint(sessions, merchant.id, receiver.url + "?token=abc")
    event = add_event(sessions, merchant.id)
    publish(settings, bus[1], event)
    [hit] = until(lambda: receiver.hits, message="the webhook")
    [d] = deliveries_of(sessions, event.id)

    assert verify_signature(hook.secret, hit.headers["X-Kassa-Signature"], hit.body)
    assert hit.body.startswith(b'{"id":"%s","event":"payment.completed","timestamp":"' % event.id.encode())
    assert b", " not in hit.body and b'"test_mode":true,"data":{' in hit.body
    assert json.loads(hit.body) == event.payload and hit.path == "/hooks?token=abc"
    assert hit.headers["Content-Type"] == "application/json"
    assert hit.headers["User-Agent"] == "Kassa-Webhooks/1.0"
    assert hit.headers["X-Kassa-Event"] == "payment.completed"
    assert hit.headers["X-Kassa-Event-Id"] == event.id
    assert hit.headers["X-Kassa-Delivery-Id"] == str(d.id)
    done = until(settled(sessions, d.id), message="recorded")
    assert done.attempts == 1 and done.last_status_code == 200 and done.last_error is None
    [a] = attempts_of(sessions, d.id)
    assert (a.attempt, a.status_code, a.response_body, a.error, a.next_retry_at) == (1, 200, "ok", None, None)


def test_500_twice_then_200_is_three_attempts_of_the_same_event(settings, sessions, merchant, bus, sender, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    receiver.fail(2)
    event = add_event(sessions, merchant.id)
    publish(settings, bus[1], event)
    [d] = until(lambda: deliveries_of(sessions, event.id))
    done = until(settled(sessions, d.id), message="the third attempt")

    hits = receiver.for_delivery(d.id)
    assert [h.status for h in hits] == [500, 500, 200]
    assert {h.headers["X-Kassa-Event-Id"] for h in hits} == {event.id}
    assert {json.loads(h.body)["id"] for h in hits} == {event.id}
    assert done.attempts == 3 and done.last_status_code == 200
    log = attempts_of(sessions, d.id)
    assert [(a.attempt, a.status_code) for a in log] == [(1, 500), (2, 500), (3, 200)]
    assert [a.error for a in log] == ["HTTP 500", "HTTP 500", None]
    assert log[0].next_retry_at is not None and log[1].next_retry_at is not None and log[2].next_retry_at is None
    assert log[0].response_body == "nope"


def test_a_failing_endpoint_is_given_up_when_the_schedule_runs_out(sessions, merchant, dispatcher, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    receiver.fail(100, status=503)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    # the window is wide enough for a loaded machine's first attempt to leave room for more
    dispatcher(retry=RetryPolicy(delays=(0.1,), repeat_every=0.5, give_up_after=5.0))
    done = until(settled(sessions, did, "FAILED"), message="giving up")
    assert done.attempts >= 2 and done.last_status_code == 503 and done.next_attempt_at is None
    assert len(attempts_of(sessions, did)) == done.attempts == len(receiver.for_delivery(did))


def test_redirects_are_not_followed(sessions, merchant, dispatcher, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    receiver.fail(1, status=302)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    dispatcher()
    until(settled(sessions, did), message="the retry")
    first = attempts_of(sessions, did)[0]
    assert first.status_code == 302 and "redirect" in first.error


def test_private_destinations_are_refused_unless_allowed(sessions, merchant, dispatcher, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    dispatcher(allow_private=False)
    [a] = until(lambda: attempts_of(sessions, did), message="the refused attempt")
    assert a.status_code is None and a.error == "destination refused: not a public address"
    d = delivery(sessions, did)
    assert d.status == "PENDING" and d.next_attempt_at > a.created_at and d.last_error == a.error
    assert receiver.count() == 0


def test_a_delivery_to_an_endpoint_deleted_meanwhile_fails_without_a_request(sessions, merchant, dispatcher, receiver):
    hook = add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    with unit_of_work(sessions) as s:
        s.execute(sa.update(WebhookEndpoint).where(WebhookEndpoint.id == hook.id).values(deleted_at=utcnow()))
    dispatcher()
    done = until(settled(sessions, did, "FAILED"))
    assert "endpoint" in done.last_error and done.attempts == 0
    assert attempts_of(sessions, did) == [] and receiver.count() == 0


def test_two_dispatchers_send_each_due_delivery_exactly_once(sessions, merchant, dispatcher, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    ids = [did for _ in range(150) for did in intake(sessions, add_event(sessions, merchant.id))]
    first, second = dispatcher(), dispatcher()
    until(lambda: count_settled(sessions, ids) == len(ids), timeout=30, message="all sent")
    assert first.recorded > 0 and second.recorded > 0  # both took part
    with sessions() as s:
        attempts = s.scalar(
            sa.select(sa.func.count()).select_from(DeliveryAttempt).where(DeliveryAttempt.delivery_id.in_(ids))
        )
    sent = [h.headers["X-Kassa-Delivery-Id"] for h in receiver.hits]
    assert sorted(sent) == sorted(str(i) for i in ids)
    assert attempts == len(ids)


def test_claims_racing_each_other_never_lease_one_delivery_twice(sessions, merchant):
    """Senders claim without a lock between them: a row another claim leased and committed
    after this statement's snapshot is skipped on the row itself, not leased again."""
    for i in range(8):
        add_endpoint(sessions, merchant.id, f"https://hooks{i}.example.com/k")
    ids = [did for _ in range(60) for did in intake(sessions, add_event(sessions, merchant.id))]
    claimers = [Dispatcher(sessions, Webhooks(Transport(), per_endpoint=64)) for _ in range(4)]
    taken: list[uuid.UUID] = []
    lock = threading.Lock()

    def claim_all(d: Dispatcher) -> None:
        while got := d.claim(3):
            with lock:
                taken.extend(j.delivery_id for j in got)

    threads = [threading.Thread(target=claim_all, args=(d,)) for d in claimers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(taken) == len(set(taken))  # nothing twice (rows left due by earlier tests included)
    assert set(ids) <= set(taken)


def test_a_claim_is_not_taken_twice_and_comes_back_when_its_lease_runs_out(sessions, merchant, dispatcher, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    channel = Webhooks(Transport())
    [job] = Dispatcher(sessions, channel, lease_seconds=0.5).claim(1, [did])  # a sender that crashes right after
    assert job.delivery_id == did
    assert Dispatcher(sessions, channel).claim(10, [did]) == []
    dispatcher()
    until(settled(sessions, did), message="the expired claim taken over")
    assert len(receiver.for_delivery(did)) == 1


def test_stop_finishes_and_records_the_send_in_progress(sessions, merchant, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    receiver.delay = 0.5
    [did] = intake(sessions, add_event(sessions, merchant.id))
    d = webhook_dispatcher(sessions, threads=2, poll_interval=0.05).start()
    until(lambda: receiver.hits, message="the send to start")
    d.stop()
    done = delivery(sessions, did)
    assert (done.status, done.attempts, done.lease_until) == ("SUCCEEDED", 1, None)


def test_stop_releases_claims_not_yet_sent(sessions, merchant, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    d = webhook_dispatcher(sessions, threads=1)
    [job] = d.claim(1, [did])
    d._stopping.set()  # claimed, then the dispatcher is told to stop before the send starts
    d.record([d.attempt(job)])
    assert delivery(sessions, did).lease_until is None and receiver.count() == 0
    assert d.claim(1, [did]) != []


# -- secret rotation --------------------------------------------------------------------------


def test_after_a_rotation_both_secrets_sign_for_the_overlap_then_only_the_new_one(
    settings, sessions, client, merchant, bus, sender, receiver
):
    """A merchant rotates through the API: for 24 h every delivery carries ``v1=new,v1=old``,
    so a receiver still holding the old secret verifies, and one already switched does too."""
    created = client.post(f"{API}/webhooks", json={"url": receiver.url}, headers=merchant.headers())
    old, wid = created.json["data"]["secret"], created.json["data"]["id"]
    new = client.post(f"{API}/webhooks/{wid}/rotate-secret", headers=merchant.headers()).json["data"]["secret"]

    publish(settings, bus[1], add_event(sessions, merchant.id))
    [hit] = until(lambda: receiver.hits, message="the webhook after the rotation")
    header = hit.headers["X-Kassa-Signature"]
    t = int(header.split(",")[0].removeprefix("t="))
    assert header == f"t={t},v1={compute(new, t, hit.body)},v1={compute(old, t, hit.body)}"
    assert verify_signature(new, header, hit.body) and verify_signature(old, header, hit.body)
    with sessions() as s:
        hook = s.get(WebhookEndpoint, uuid.UUID(wid))
        overlap = hook.previous_secret_expires_at - hook.updated_at
    assert overlap == timedelta(hours=24)

    with unit_of_work(sessions) as s:  # the overlap is over
        s.execute(
            sa.update(WebhookEndpoint)
            .where(WebhookEndpoint.id == uuid.UUID(wid))
            .values(previous_secret_expires_at=utcnow() - timedelta(seconds=1))
        )
    publish(settings, bus[1], add_event(sessions, merchant.id))
    [_, later] = until(lambda: receiver.hits[1:] and receiver.hits, message="the webhook after the overlap")
    header = later.headers["X-Kassa-Signature"]
    assert header.count("v1=") == 1 and verify_signature(new, header, later.body)
    with pytest.raises(SignatureError):
        verify_signature(old, header, later.body)
