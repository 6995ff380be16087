"""No receiver can delay another merchant's webhooks (DESIGN.md section 10): one merchant's
endpoint that drips bytes and another that never answers, each with dozens of deliveries
due, beside a healthy endpoint of another merchant. The sender runs as in production (32
threads, 10 s per attempt, at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = 4 deliveries under
way per endpoint); the healthy endpoint's webhooks arrive in their normal time, and every
dripping attempt is cut at 10 s."""

from __future__ import annotations

import socket
import statistics
import threading
import time

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import DeliveryAttempt, WebhookDelivery
from kassa_webhook_sender.engine.dispatcher import AHEAD, Dispatcher
from kassa_webhook_sender.engine.retry import DEFAULT_POLICY
from kassa_webhook_sender.webhooks.channel import Webhooks
from kassa_webhook_sender.webhooks.transport import Transport
from tests.support.raw_server import RawServer, drip, silent
from tests.support.wait import until
from tests.support.webhooks import Receiver, add_endpoint, add_event, count_settled, intake

STUCK_EACH = 40  # deliveries due to each bad endpoint: more than the sender's threads together
HEALTHY = 8
BURST = 200  # deliveries handed over at once to one quick endpoint: fifty times its places


class Arrivals:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.lock = threading.Lock()

    def behave(self, conn: socket.socket) -> None:
        with self.lock:
            self.times[str(len(self.times))] = time.monotonic()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def test_a_dripping_and_a_silent_receiver_do_not_delay_another_merchants_webhooks(sessions, make_merchant):
    attacker, shop = make_merchant(), make_merchant()
    arrivals = Arrivals()
    dripping = RawServer(drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * 200, every=2.0))
    never = RawServer(silent)
    healthy = RawServer(arrivals.behave)
    add_endpoint(sessions, attacker.id, dripping.url)
    add_endpoint(sessions, attacker.id, never.url)
    add_endpoint(sessions, shop.id, healthy.url)
    for _ in range(STUCK_EACH):
        intake(sessions, add_event(sessions, attacker.id, "payment.created"))
    channel = Webhooks(Transport(allow_private=True))
    dispatcher = Dispatcher(sessions, channel, threads=32, retry=DEFAULT_POLICY, poll_interval=0.25).start()
    try:
        time.sleep(2)  # the bad endpoints' deliveries are under way
        latencies = []
        for i in range(HEALTHY):
            created = time.monotonic()
            intake(sessions, add_event(sessions, shop.id, "payment.created"))  # found by the claimer's poll
            deadline = created + 30
            while len(arrivals.times) <= i and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(arrivals.times) > i, f"the healthy endpoint's webhook {i} did not arrive within 30 s"
            latencies.append(arrivals.times[str(i)] - created)
            time.sleep(1)
        time.sleep(max(0.0, 12 - HEALTHY))  # the first dripping attempts have met their deadline
        with unit_of_work(sessions) as s:
            cut = s.execute(
                sa.select(DeliveryAttempt.duration_ms, DeliveryAttempt.error)
                .join(WebhookDelivery, WebhookDelivery.id == DeliveryAttempt.delivery_id)
                .where(
                    WebhookDelivery.endpoint_id.in_(
                        sa.select(sa.text("id"))
                        .select_from(sa.text("webhook_endpoints"))
                        .where(sa.text("url = :u"))
                        .params(u=dripping.url)
                    )
                )
            ).all()
    finally:
        dispatcher.stop(timeout=15)
        for server in (dripping, never, healthy):
            server.close()
    print(
        f"\nhealthy endpoint: webhook arrival after the event, seconds: "
        f"median {statistics.median(latencies):.3f}, max {max(latencies):.3f} "
        f"({', '.join(f'{x:.3f}' for x in latencies)})"
    )
    print(f"dripping endpoint: {len(cut)} attempts, durations ms {sorted(d for d, _ in cut)}")
    assert max(latencies) < 2.0, latencies  # the claimer polls every 0.25 s: not the 10 s of a stuck thread
    assert cut and all(9_500 <= d <= 11_500 and "timed out" in (e or "") for d, e in cut), cut
    assert len(cut) <= 2 * 4  # at most four under way at once: the first four, maybe their successors


class CountingWebhooks(Webhooks):
    """The webhook channel, counting the claims the dispatcher makes."""

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.claims = 0

    def claim(self, session, n, lease_seconds, ids, held=None):
        self.claims += 1
        return super().claim(session, n, lease_seconds, ids, held)


def test_the_per_endpoint_limit_bounds_deliveries_under_way_not_deliveries_per_poll(sessions, make_merchant):
    """A burst for one quick receiver, handed over by intake, goes out as fast as its four
    places free up: every delivery arrives although the claimer's poll timer (an hour here)
    never fires, and the claimer claims about once per place freed, not in a busy loop."""
    shop = make_merchant()
    receiver = Receiver()
    add_endpoint(sessions, shop.id, receiver.url)
    events = [add_event(sessions, shop.id) for _ in range(BURST)]
    channel = CountingWebhooks(Transport(allow_private=True))
    dispatcher = Dispatcher(sessions, channel, threads=32, poll_interval=3600).start()
    try:
        ids = [i for e in events for i in intake(sessions, e)]
        dispatcher.submit(ids)
        until(lambda: count_settled(sessions, ids) == BURST, timeout=60, message="every delivery, without a poll")
    finally:
        dispatcher.stop()
        receiver.close()
    assert sorted(h.headers["X-Kassa-Event-Id"] for h in receiver.all()) == sorted(e.id for e in events)
    print(f"\n{BURST} deliveries, {channel.claims} claims")
    assert channel.claims <= 2 * BURST, channel.claims


class Stuck:
    """A receiver that reads each request and never answers, counting the requests it holds."""

    def __init__(self) -> None:
        self.held, self.most = 0, 0
        self.lock = threading.Lock()

    def behave(self, conn: socket.socket) -> None:
        with self.lock:
            self.held += 1
            self.most = max(self.most, self.held)
        try:
            silent(conn)
        finally:
            with self.lock:
                self.held -= 1


def test_deliveries_waiting_for_a_place_do_not_hold_up_another_merchants_webhook(sessions, make_merchant):
    """Deliveries to a receiver that never answers fill its four places and the rest wait
    for one; another merchant's webhook handed over after them is claimed at once, not
    behind them: it arrives while the stuck attempts are all still under way (and the
    claimer's poll timer, an hour here, never fires). The sender holds some of the stuck
    endpoint's deliveries claimed ahead, never more than four under way."""
    attacker, shop = make_merchant(), make_merchant()
    stuck = Stuck()
    never, receiver = RawServer(stuck.behave), Receiver()
    stuck_endpoint = add_endpoint(sessions, attacker.id, never.url)
    add_endpoint(sessions, shop.id, receiver.url)
    dispatcher = Dispatcher(sessions, Webhooks(Transport(allow_private=True)), threads=32, poll_interval=3600).start()

    def stuck_rows(*where):
        with unit_of_work(sessions) as s:
            return s.scalar(
                sa.select(sa.func.count())
                .select_from(WebhookDelivery)
                .where(WebhookDelivery.endpoint_id == stuck_endpoint.id, *where)
            )

    try:
        dispatcher.submit(i for _ in range(BURST) for i in intake(sessions, add_event(sessions, attacker.id)))
        until(lambda: stuck.held == 4, message="four stuck attempts")
        leased = stuck_rows(WebhookDelivery.lease_until.is_not(None))
        dispatcher.submit(intake(sessions, add_event(sessions, shop.id)))
        until(lambda: receiver.count() == 1, timeout=30, message="the other merchant's webhook")
        recorded = stuck_rows(WebhookDelivery.attempts > 0)
        time.sleep(0.5)  # a fifth attempt would have reached the receiver by now
    finally:
        dispatcher.stop(timeout=15)
        never.close()
        receiver.close()
    assert recorded == 0  # it did not wait for a stuck attempt to be cut
    assert stuck.most == 4
    assert 4 < leased <= AHEAD * 4  # claimed ahead, within its bound


def test_a_delivery_claimed_ahead_is_released_unsent_past_half_its_lease(sessions, make_merchant):
    """A delivery claimed ahead that waited for a place longer than half its lease is never
    sent by this sender (another one may have claimed it once the lease ran out): it is
    released, and sent later by a claim of its own. Nothing is sent twice."""
    shop = make_merchant()
    slow = RawServer(drip(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", every=0.02))
    endpoint = add_endpoint(sessions, shop.id, slow.url)
    channel = Webhooks(Transport(allow_private=True), per_endpoint=1)
    dispatcher = Dispatcher(sessions, channel, threads=4, poll_interval=0.25, lease_seconds=2).start()
    events = [add_event(sessions, shop.id) for _ in range(6)]  # ~1.3 s a send, one place, 1 s to start
    try:
        ids = [i for e in events for i in intake(sessions, e)]
        dispatcher.submit(ids)
        until(lambda: count_settled(sessions, ids) == len(ids), timeout=60, message="every delivery")
        with unit_of_work(sessions) as s:
            attempts = s.scalars(
                sa.select(DeliveryAttempt.delivery_id)
                .join(WebhookDelivery, WebhookDelivery.id == DeliveryAttempt.delivery_id)
                .where(WebhookDelivery.endpoint_id == endpoint.id)
            ).all()
    finally:
        dispatcher.stop(timeout=15)
        slow.close()
    assert sorted(attempts) == sorted(ids)  # one attempt each
