"""The dashboard says how an endpoint is doing, in words: failing since when, how many
attempts, the latest success; each attempt's outcome as a sentence, never a raw errno."""

from __future__ import annotations

import socket

import sqlalchemy as sa

from kassa_common.models import Merchant
from tests.support.dashboard import log_in, merchant_with_password
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.webhooks import add_endpoint, add_event, attempts_of, dispatcher, intake, settled  # noqa: F401  (fixture)


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refusing_endpoint_shows_failing_in_words_and_a_working_one_healthy(sessions, client, dispatcher, receiver):
    email = merchant_with_password(sessions)
    with sessions() as s:
        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == email))
    dead = add_endpoint(sessions, merchant_id, f"http://127.0.0.1:{closed_port()}/hook")
    [did] = intake(sessions, add_event(sessions, merchant_id))
    dispatcher()
    until(lambda: len(attempts_of(sessions, did)) >= 2, message="two refused attempts")
    log_in(client, email)
    page = client.get(f"/dashboard/webhooks/{dead.id}").get_data(as_text=True)
    assert 'id="health"' in page and "failing" in page and "none has succeeded yet" in page
    assert "your server refused the connection" in page and "Errno" not in page
    assert "failing" in client.get("/dashboard/webhooks").get_data(as_text=True)

    alive = add_endpoint(sessions, merchant_id, receiver.url)
    [ok] = [d for d in intake(sessions, add_event(sessions, merchant_id)) if d != did][:1] or [None]
    until(lambda: receiver.hits, message="the working endpoint's delivery")
    until(lambda: "healthy" in client.get(f"/dashboard/webhooks/{alive.id}").get_data(as_text=True), message="healthy")
    assert "your server answered 200" in client.get(f"/dashboard/webhooks/{alive.id}").get_data(as_text=True)
    assert ok is not None
