"""The webhook sender against real PostgreSQL, real RabbitMQ (a private topology) and a
real HTTP receiver on 127.0.0.1: intake, signed delivery, retries, leases, refusals."""
from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlalchemy as sa

from kassa_common.bus.consumer import Delivered
from kassa_common.bus.publisher import Message, Publisher
from kassa_common.db import unit_of_work
from kassa_common.events import ALL_EVENTS, envelope
from kassa_common.ids import new_event_id, new_webhook_secret
from kassa_common.models import DeliveryAttempt, Event, WebhookDelivery, WebhookEndpoint
from kassa_common.signing import verify_signature
from kassa_common.timefmt import utcnow
from kassa_webhook_sender import store
from kassa_webhook_sender.dispatcher import Dispatcher
from kassa_webhook_sender.intake import handle_event
from kassa_webhook_sender.main import build
from kassa_webhook_sender.retry import RetryPolicy
from kassa_webhook_sender.transport import Transport
from tests.support.bus import private_topology
from tests.support.wait import until

FAST = RetryPolicy(delays=(0.2, 0.2), repeat_every=0.2, give_up_after=60)


# -- a real receiver ------------------------------------------------------------------------

@dataclass(frozen=True)
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int


class Receiver:
    """Records every POST (headers and raw body); answers ``status`` ``n`` times on request."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self._failures: list[int] = []
        self.delay = 0.0  # seconds to wait before answering
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real receivers do
            disable_nagle_algorithm = True  # headers and body are separate writes

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer._lock:
                    status = outer._failures.pop(0) if outer._failures else 200
                    outer.hits.append(Hit(self.path, dict(self.headers), body, status))
                time.sleep(outer.delay)
                reply = b"nope" if status >= 300 else b"ok"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fail(self, n: int, status: int = 500) -> None:
        with self._lock:
            self._failures = [status] * n

    def for_delivery(self, delivery_id) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.headers.get("X-Kassa-Delivery-Id") == str(delivery_id)]

    def count(self) -> int:
        with self._lock:
            return len(self.hits)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- fixtures and helpers -------------------------------------------------------------------

@pytest.fixture(scope="module")
def bus(settings):
    with private_topology(settings.rabbitmq_url) as (prefix, topo):
        yield prefix, topo


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def sender(settings, engine, bus):
    s = build(settings.with_(bus_prefix=bus[0], webhook_allow_private_urls=True), engine=engine, retry=FAST,
              threads=8, poll_interval=0.05).start()
    yield s
    s.stop()


@pytest.fixture
def dispatcher(sessions):
    started: list[Dispatcher] = []

    def make(*, allow_private: bool = True, retry: RetryPolicy = FAST) -> Dispatcher:
        d = Dispatcher(sessions, Transport(timeout=5, allow_private=allow_private), threads=8, retry=retry,
                       poll_interval=0.05)
        started.append(d.start())
        return d

    yield make
    for d in started:
        d.stop()


def add_endpoint(sessions, merchant_id, url, *, events=ALL_EVENTS, test_mode=True, active=True,
                 deleted=False) -> WebhookEndpoint:
    with unit_of_work(sessions) as s:
        hook = WebhookEndpoint(id=uuid.uuid4(), merchant_id=merchant_id, test_mode=test_mode, url=url,
                               events=list(events), active=active, secret=new_webhook_secret(),
                               deleted_at=utcnow() if deleted else None)
        s.add(hook)
    return hook


def add_event(sessions, merchant_id, event_type="payment.completed", *, test_mode=True) -> Event:
    eid = new_event_id()
    data = {"payment_id": str(uuid.uuid4()), "status": "COMPLETED", "amount": 12.5, "metadata": {"n": "é"}}
    with unit_of_work(sessions) as s:
        event = Event(id=eid, type=event_type, merchant_id=merchant_id, test_mode=test_mode,
                      payload=envelope(eid, event_type, test_mode, data, utcnow()), published_at=utcnow())
        s.add(event)
    return event


def intake(sessions, event: Event) -> list:
    with unit_of_work(sessions) as s:
        return handle_event(s, Delivered(event.id, event.type, event.payload, 1)) or []


def publish(settings, topo, *events: Event) -> None:
    pub = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
    try:
        pub.publish_batch(Message(e.id, e.type, e.payload) for e in events)
    finally:
        pub.close()


def delivery(sessions, delivery_id) -> WebhookDelivery:
    with sessions() as s:
        return s.get(WebhookDelivery, delivery_id)


def deliveries_of(sessions, event_id) -> list[WebhookDelivery]:
    with sessions() as s:
        return list(s.scalars(sa.select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)))


def attempts_of(sessions, delivery_id) -> list[DeliveryAttempt]:
    with sessions() as s:
        return list(s.scalars(sa.select(DeliveryAttempt).where(DeliveryAttempt.delivery_id == delivery_id)
                              .order_by(DeliveryAttempt.attempt)))


def settled(sessions, delivery_id, status="SUCCEEDED"):
    return lambda: (d := delivery(sessions, delivery_id)).status == status and d.lease_until is None and d


def count_settled(sessions, ids, status="SUCCEEDED") -> int:
    with sessions() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.id.in_(ids), WebhookDelivery.status == status, WebhookDelivery.lease_until.is_(None)))


# -- intake ---------------------------------------------------------------------------------

def test_intake_creates_a_delivery_only_for_subscribed_live_endpoints_of_the_same_merchant_and_mode(
        sessions, make_merchant):
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


def test_bus_events_become_deliveries_and_a_redelivered_message_adds_none(settings, sessions, merchant, bus,
                                                                         sender, receiver):
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

def test_a_delivery_is_posted_with_a_signature_over_the_exact_bytes(settings, sessions, merchant, bus, sender,
                                                                   receiver):
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


def test_500_twice_then_200_is_three_attempts_of_the_same_event(settings, sessions, merchant, bus, sender,
                                                               receiver):
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
    dispatcher(retry=RetryPolicy(delays=(0.1,), repeat_every=0.1, give_up_after=0.35))
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
    assert a.status_code is None and "refused" in a.error and "127.0.0.1" in a.error
    d = delivery(sessions, did)
    assert d.status == "PENDING" and d.next_attempt_at > a.created_at and d.last_error == a.error
    assert receiver.count() == 0


def test_a_delivery_to_an_endpoint_deleted_meanwhile_fails_without_a_request(sessions, merchant, dispatcher,
                                                                            receiver):
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
        attempts = s.scalar(sa.select(sa.func.count()).select_from(DeliveryAttempt)
                            .where(DeliveryAttempt.delivery_id.in_(ids)))
    sent = [h.headers["X-Kassa-Delivery-Id"] for h in receiver.hits]
    assert sorted(sent) == sorted(str(i) for i in ids)
    assert attempts == len(ids)


def test_a_claim_is_not_taken_twice_and_comes_back_when_its_lease_runs_out(sessions, merchant, dispatcher,
                                                                          receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    [job] = store.claim(sessions, 1, 0.5, [did])  # a sender that crashes right after claiming
    assert job.delivery_id == did
    assert store.claim(sessions, 10, 60, [did]) == []
    dispatcher()
    until(settled(sessions, did), message="the expired claim taken over")
    assert len(receiver.for_delivery(did)) == 1


def test_stop_finishes_and_records_the_send_in_progress(sessions, merchant, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    receiver.delay = 0.5
    [did] = intake(sessions, add_event(sessions, merchant.id))
    d = Dispatcher(sessions, Transport(timeout=5, allow_private=True), threads=2, poll_interval=0.05).start()
    until(lambda: receiver.hits, message="the send to start")
    d.stop()
    done = delivery(sessions, did)
    assert (done.status, done.attempts, done.lease_until) == ("SUCCEEDED", 1, None)


def test_stop_releases_claims_not_yet_sent(sessions, merchant, receiver):
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    [job] = store.claim(sessions, 1, 60, [did])
    d = Dispatcher(sessions, Transport(timeout=5, allow_private=True), threads=1)
    d._stopping.set()  # claimed, then the dispatcher is told to stop before the send starts
    store.record(sessions, [d.attempt(job)])
    assert delivery(sessions, did).lease_until is None and receiver.count() == 0
    assert store.claim(sessions, 1, 60, [did]) != []


# -- the API: delivery log, redeliver, test -------------------------------------------------

API = "/v1/api"


def api_webhook(client, merchant, url, mode="test", **fields) -> dict:
    r = client.post(f"{API}/webhooks", json={"url": url, **fields}, headers=merchant.headers(mode))
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]


def log_of(client, merchant, hook_id, query="", mode="test"):
    r = client.get(f"{API}/webhooks/{hook_id}/deliveries{query}", headers=merchant.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_json()


def test_the_delivery_log_pages_newest_first_with_every_attempt(client, sessions, merchant, dispatcher, receiver):
    hook = api_webhook(client, merchant, receiver.url)
    receiver.fail(1)
    ids = [intake(sessions, add_event(sessions, merchant.id))[0] for _ in range(3)]
    dispatcher()
    until(lambda: count_settled(sessions, ids) == len(ids), message="all delivered")

    body = log_of(client, merchant, hook["id"], "?pageSize=2")
    assert body["success"] is True and body["meta"] == {"page": 1, "pageSize": 2, "total": 3, "pages": 2}
    page2 = log_of(client, merchant, hook["id"], "?page=2&pageSize=2")["data"]
    items = body["data"] + page2
    assert [i["id"] for i in items] == [str(i) for i in reversed(ids)]
    retried = next(i for i in items if i["attempts"] == 2)
    assert [a["status_code"] for a in retried["attempts_log"]] == [500, 200]
    first, second = retried["attempts_log"]
    assert first["error"] == "HTTP 500" and first["next_retry_at"] and first["attempt"] == 1
    assert second["error"] is None and second["next_retry_at"] is None and second["duration_ms"] >= 0
    assert retried["status"] == "SUCCEEDED" and retried["last_status_code"] == 200
    assert retried["event"] == "payment.completed" and retried["event_id"].startswith("evt_")
    assert retried["webhook_id"] == hook["id"] and retried["next_attempt_at"] is None
    assert set(retried) == {"id", "webhook_id", "event_id", "event", "status", "attempts", "last_status_code",
                            "last_error", "next_attempt_at", "created_at", "updated_at", "attempts_log"}
    assert log_of(client, merchant, hook["id"], "?status=FAILED")["data"] == []
    assert client.get(f"{API}/webhooks/{hook['id']}/deliveries?pageSize=101",
                      headers=merchant.headers()).status_code == 400


def test_redeliver_sends_the_same_event_again(client, sessions, merchant, dispatcher, receiver):
    hook = api_webhook(client, merchant, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    dispatcher()
    until(settled(sessions, did))

    r = client.post(f"{API}/webhooks/{hook['id']}/deliveries/{did}/redeliver", headers=merchant.headers())
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["data"]["id"] == str(did) and r.get_json()["data"]["status"] == "PENDING"
    hits = until(lambda: len(receiver.for_delivery(did)) == 2 and receiver.for_delivery(did))
    assert hits[0].headers["X-Kassa-Event-Id"] == hits[1].headers["X-Kassa-Event-Id"]
    until(lambda: settled(sessions, did)() and settled(sessions, did)().attempts == 2)
    [item] = log_of(client, merchant, hook["id"])["data"]
    assert [a["attempt"] for a in item["attempts_log"]] == [1, 2]


def test_the_test_endpoint_sends_a_signed_webhook_test_event(client, sessions, merchant, dispatcher, receiver):
    hook = api_webhook(client, merchant, receiver.url)
    r = client.post(f"{API}/webhooks/{hook['id']}/test", headers=merchant.headers())
    assert r.status_code == 200, r.get_data(as_text=True)
    sent = r.get_json()["data"]
    assert sent["event"] == "webhook.test" and sent["status"] == "PENDING" and sent["attempts_log"] == []
    dispatcher()
    [hit] = until(lambda: receiver.hits, message="the test webhook")
    assert verify_signature(hook["secret"], hit.headers["X-Kassa-Signature"], hit.body)
    payload = json.loads(hit.body)
    assert payload["event"] == "webhook.test" and payload["id"] == sent["event_id"] == hit.headers["X-Kassa-Event-Id"]
    assert payload["test_mode"] is True and payload["data"]["webhook_id"] == hook["id"]
    assert payload["data"]["message"] and payload["timestamp"].endswith("Z")
    with sessions() as s:
        assert s.get(Event, sent["event_id"]).published_at is not None  # the relay never publishes it
    until(settled(sessions, uuid.UUID(sent["id"])))


def test_delivery_endpoints_never_reveal_other_merchants_modes_or_endpoints(client, sessions, make_merchant,
                                                                          receiver):
    m, other = make_merchant(), make_merchant()
    mine, sibling = api_webhook(client, m, receiver.url), api_webhook(client, m, receiver.url)
    theirs = api_webhook(client, other, receiver.url)
    [did] = [i for i in intake(sessions, add_event(sessions, m.id))
             if delivery(sessions, i).endpoint_id == uuid.UUID(mine["id"])]
    cases = [
        ("get", f"/webhooks/{theirs['id']}/deliveries", "test"),
        ("post", f"/webhooks/{theirs['id']}/test", "test"),
        ("get", f"/webhooks/{mine['id']}/deliveries", "live"),
        ("post", f"/webhooks/{mine['id']}/test", "live"),
        ("post", f"/webhooks/{mine['id']}/deliveries/{did}/redeliver", "live"),
        ("post", f"/webhooks/{sibling['id']}/deliveries/{did}/redeliver", "test"),
        ("post", f"/webhooks/{mine['id']}/deliveries/{uuid.uuid4()}/redeliver", "test"),
        ("post", f"/webhooks/{mine['id']}/deliveries/not-an-id/redeliver", "test"),
        ("get", "/webhooks/not-an-id/deliveries", "test"),
    ]
    for method, path, mode in cases:
        r = getattr(client, method)(API + path, headers=m.headers(mode))
        assert r.status_code == 404 and r.get_json()["error"]["code"] == "NOT_FOUND", (path, mode)


def test_test_and_redeliver_to_a_disabled_endpoint_are_refused(client, sessions, merchant, receiver):
    hook = api_webhook(client, merchant, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    assert client.patch(f"{API}/webhooks/{hook['id']}", json={"active": False},
                        headers=merchant.headers()).status_code == 200
    for path in (f"/webhooks/{hook['id']}/test", f"/webhooks/{hook['id']}/deliveries/{did}/redeliver"):
        r = client.post(API + path, headers=merchant.headers())
        assert r.status_code == 422 and r.get_json()["error"]["code"] == "UNPROCESSABLE_ENTITY", path


def test_delivery_endpoints_need_the_webhooks_scope(client, sessions, merchant, receiver):
    from tests.support.api import new_key

    hook = api_webhook(client, merchant, receiver.url)
    key = new_key(sessions, merchant.id, "test", ["payments:read"])
    for method, path in (("get", "deliveries"), ("post", "test")):
        r = getattr(client, method)(f"{API}/webhooks/{hook['id']}/{path}", headers={"X-Api-Key": key})
        assert r.status_code == 403 and r.get_json()["error"]["code"] == "FORBIDDEN"
