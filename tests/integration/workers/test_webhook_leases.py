"""Who may record a delivery's outcome: only the sender whose lease the row still carries.

Real PostgreSQL, a real HTTP receiver on 127.0.0.1 holding requests open, real dispatchers:
a sender whose lease ran out (and was taken over) records nothing when its slow attempt
ends, and a merchant's redeliver posted while an attempt is in flight takes the row from
that attempt, so the delivery is sent again instead of being overwritten by its outcome.
"""

from __future__ import annotations

import logging
import threading
import time

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Event
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.webhooks import (  # noqa: F401  (fixture)
    FAST,
    add_endpoint,
    add_event,
    attempts_of,
    delivery,
    dispatcher,
    intake,
    settled,
    webhook_dispatcher,
)

API = "/v1/api"
HELD = 1.5  # seconds the receiver holds the first request open


def test_a_late_recorder_whose_lease_was_taken_over_writes_nothing(sessions, merchant, dispatcher, receiver, caplog):
    """Sender A's attempt outlives its lease; sender B takes the row over and delivers it;
    A's attempt then ends in a 500. A's outcome must not put the success back to PENDING
    (which would send the event a third time): it is dropped, with a warning."""
    add_endpoint(sessions, merchant.id, receiver.url)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    receiver.fail(1, 500)
    receiver.delay = HELD
    late = webhook_dispatcher(sessions, lease_seconds=0.3, retry=FAST)
    [job] = late.claim(1, [did])
    outcomes = []
    sending = threading.Thread(target=lambda: outcomes.append(late.attempt(job)))
    sending.start()
    until(lambda: receiver.for_delivery(did), message="A's attempt in flight")
    receiver.delay = 0  # B's attempt is answered at once (200)
    dispatcher()  # B: claims the row once A's lease has run out
    done = until(settled(sessions, did), message="B delivered it")
    sending.join(10)
    [outcome] = outcomes
    assert outcome.status == "PENDING" and outcome.result.status_code == 500  # A's view: retry soon

    with caplog.at_level(logging.WARNING, logger="kassa.webhooks"):
        late.record([outcome])
    after = delivery(sessions, did)
    assert (after.status, after.attempts, after.lease_until) == ("SUCCEEDED", 1, None)
    assert after.updated_at == done.updated_at and after.last_status_code == 200
    assert [(a.attempt, a.status_code) for a in attempts_of(sessions, did)] == [(1, 200)]
    assert any(str(did) in r.getMessage() and "lease" in r.getMessage() for r in caplog.records)
    assert len(receiver.for_delivery(did)) == 2  # and, SUCCEEDED, it is not sent again


def test_a_redeliver_posted_while_an_attempt_is_in_flight_is_sent_after_it(
    client, sessions, merchant, dispatcher, receiver
):
    """The merchant asks for a redelivery while the receiver still holds the first request
    open: the redeliver wins. The delivery is sent again (a request that starts after the
    redeliver), and the first attempt's outcome, recorded after it, changes nothing."""
    r = client.post(f"{API}/webhooks", json={"url": receiver.url}, headers=merchant.headers())
    hook = r.get_json()["data"]
    receiver.delay = HELD
    [did] = intake(sessions, add_event(sessions, merchant.id))
    sender = dispatcher()
    [first] = until(lambda: receiver.for_delivery(did), message="the first attempt in flight")
    receiver.delay = 0

    asked = time.time()
    r = client.post(f"{API}/webhooks/{hook['id']}/deliveries/{did}/redeliver", headers=merchant.headers())
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["data"]["status"] == "PENDING"

    hits = until(lambda: len(receiver.for_delivery(did)) >= 2 and receiver.for_delivery(did), timeout=10)
    assert hits[1].at >= asked and hits[1].headers["X-Kassa-Event-Id"] == first.headers["X-Kassa-Event-Id"]
    until(lambda: sender.recorded >= 2, timeout=10, message="both outcomes recorded")  # the held one too
    d = until(lambda: (row := delivery(sessions, did)).status != "PENDING" and row, timeout=10, message="settled")
    assert (d.status, d.attempts, d.lease_until, d.last_status_code) == ("SUCCEEDED", 1, None, 200)
    assert len(receiver.for_delivery(did)) == 2


def test_a_delivery_whose_event_is_deleted_in_flight_ends_and_the_rest_of_its_batch_is_recorded(
    sessions, merchant, receiver, caplog
):
    """Retention deletes an event (and, by its foreign key, its deliveries) while one of them
    is being sent. That delivery ends there (no row is left PENDING, nothing is retried),
    and its outcome, recorded in one batch with another delivery's, neither fails the batch
    nor leaves the other delivery leased (to be sent again once the lease runs out)."""
    add_endpoint(sessions, merchant.id, receiver.url)
    gone, kept = add_event(sessions, merchant.id), add_event(sessions, merchant.id)
    [gone_id], [kept_id] = intake(sessions, gone), intake(sessions, kept)
    sender = webhook_dispatcher(sessions)
    jobs = sender.claim(2, [gone_id, kept_id])
    outcomes = [sender.attempt(job) for job in sorted(jobs, key=lambda j: j.delivery_id != gone_id)]
    with unit_of_work(sessions) as s:  # as retention's DELETE of an event past its window
        s.execute(sa.delete(Event).where(Event.id == gone.id))

    with caplog.at_level(logging.WARNING, logger="kassa.webhooks"):
        sender.record(outcomes)
    assert delivery(sessions, gone_id) is None and attempts_of(sessions, gone_id) == []
    done = delivery(sessions, kept_id)
    assert (done.status, done.attempts, done.lease_until) == ("SUCCEEDED", 1, None)
    assert [a.status_code for a in attempts_of(sessions, kept_id)] == [200]
    assert any(str(gone_id) in r.getMessage() for r in caplog.records)
