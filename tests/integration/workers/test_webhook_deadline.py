"""One wall-clock deadline per webhook attempt (DESIGN.md section 10): a receiver that
drips a byte every couple of seconds, in the headers or in the body, or that never
answers, is cut off at 10 s, and answers 400/404/410 are failures to retry."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from kassa_webhook_sender.webhooks.transport import Request, Transport
from tests.support.raw_server import RawServer, answer, drip, silent


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def make(behave: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(behave))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def post(transport: Transport, url: str):
    return transport.post(Request(url, b'{"x":1}', "t=1,v1=00", "payment.created", "evt_1", "d1"))


HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Padding: " + b"a" * 100 + b"\r\n\r\n"
BODY = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"b" * 1000


@pytest.mark.parametrize(
    "where, text", [("headers", HEADERS), ("body", BODY[:60] + b"b" * 100)], ids=["headers", "body"]
)
def test_a_receiver_dripping_bytes_is_cut_at_ten_seconds(raw_server, where, text):
    if where == "body":  # the headers at once, then the body a byte at a time
        head = BODY[: BODY.index(b"\r\n\r\n") + 4]

        def behave(conn: socket.socket) -> None:
            conn.sendall(head)
            drip(b"b" * 100)(conn)

        server = raw_server(behave)
    else:
        server = raw_server(drip(text))
    transport = Transport(allow_private=True)  # the default: 10 s for the whole attempt
    started = time.monotonic()
    result = post(transport, server.url)
    took = time.monotonic() - started
    transport.close()
    assert 9.5 <= took <= 11.5, took
    assert not result.ok and "timed out" in (result.error or ""), result


def test_a_receiver_that_never_answers_is_cut_at_the_deadline(raw_server):
    server = raw_server(silent)
    transport = Transport(timeout=3, allow_private=True)
    started = time.monotonic()
    result = post(transport, server.url)
    assert 2.8 <= time.monotonic() - started <= 4.0
    assert result.error == "timed out"
    transport.close()


@pytest.mark.parametrize("status", [400, 404, 410, 500])
def test_4xx_and_5xx_answers_are_failures(raw_server, status):
    server = raw_server(answer(status))
    transport = Transport(timeout=5, allow_private=True)
    result = post(transport, server.url)
    transport.close()
    assert result.status_code == status and not result.ok and result.error == f"HTTP {status}"


def test_a_quick_answer_after_a_cut_one_is_not_hurt(raw_server):
    """The deadline of an expired attempt does not touch the next one on a kept-alive connection."""
    transport = Transport(timeout=2, allow_private=True)
    slow, quick = raw_server(silent), raw_server(answer(200))
    assert post(transport, slow.url).error == "timed out"
    for _ in range(3):
        result = post(transport, quick.url)
        assert result.ok and result.duration_ms < 1000, result
    transport.close()


# ---- the dispatcher's decision after a failed attempt -------------------------------------


def job_after(attempts: int, url: str, created_at):
    import uuid

    from kassa_webhook_sender.webhooks.channel import Job

    return Job(
        uuid.uuid4(),
        "evt_sched",
        "payment.created",
        attempts,
        created_at,
        url,
        "whsec_x",
        True,
        {"id": "evt_sched", "event": "payment.created", "data": {}},
    )


@pytest.fixture
def failing_dispatcher(raw_server):
    from kassa_webhook_sender.engine.dispatcher import Dispatcher
    from kassa_webhook_sender.webhooks.channel import Webhooks

    def make(status: int):
        server = raw_server(answer(status))
        channel = Webhooks(Transport(timeout=5, allow_private=True))
        return Dispatcher(None, channel), server.url  # attempt() uses no database

    return make


def test_the_default_schedule_delay_by_delay_as_the_dispatcher_applies_it(failing_dispatcher):
    """After the n-th failed attempt the next one is due after the n-th delay of DESIGN.md
    section 3 (5 s, 30 s, 2 min, ... then every 12 h), counted from the attempt: checked for
    every attempt a delivery makes before it gives up at three days."""
    from datetime import timedelta

    from kassa_common.statuses import DeliveryStatus
    from kassa_common.timefmt import utcnow

    dispatcher, url = failing_dispatcher(500)
    expected = [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 43200, 43200, 43200]
    created, elapsed = utcnow(), 0.0
    for made, delay in enumerate(expected):
        job = job_after(made, url, created - timedelta(seconds=elapsed))
        before = utcnow()
        outcome = dispatcher.attempt(job)
        after = utcnow()
        assert outcome.status == DeliveryStatus.PENDING and outcome.result.status_code == 500, (made, outcome)
        waited = outcome.next_attempt_at
        assert before + timedelta(seconds=delay) <= waited <= after + timedelta(seconds=delay), (
            made,
            delay,
            waited - before,
        )
        elapsed += delay
    last = dispatcher.attempt(job_after(len(expected), url, created - timedelta(seconds=elapsed)))
    assert last.status == DeliveryStatus.FAILED and last.next_attempt_at is None  # three days are up
    dispatcher.channel.close()


@pytest.mark.parametrize("status", [400, 404, 410])
def test_a_4xx_answer_is_a_failed_attempt_retried_later(failing_dispatcher, status):
    from datetime import timedelta

    from kassa_common.statuses import DeliveryStatus
    from kassa_common.timefmt import utcnow

    dispatcher, url = failing_dispatcher(status)
    before = utcnow()
    outcome = dispatcher.attempt(job_after(0, url, before))
    assert outcome.status == DeliveryStatus.PENDING, outcome  # not SUCCEEDED
    assert outcome.result.status_code == status and outcome.result.error == f"HTTP {status}"
    assert before + timedelta(seconds=5) <= outcome.next_attempt_at <= utcnow() + timedelta(seconds=5)
    dispatcher.channel.close()
