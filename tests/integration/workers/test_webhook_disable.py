"""An endpoint failing every attempt for 3 days is disabled and its merchant emailed (as
Stripe does); re-enabling it (API or dashboard) starts its failure streak over. A real HTTP
receiver, the real dispatcher, a real SMTP server; the streak's start is moved back in
the database instead of waiting 3 days."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import WebhookEndpoint
from kassa_common.timefmt import utcnow
from tests.support.api import API
from tests.support.dashboard import csrf_of, log_in, merchant_with_password
from tests.support.mail_notifier import notifier  # noqa: F401  (fixture)
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.webhooks import add_endpoint, add_event, dispatcher, intake, settled  # noqa: F401  (fixture)


def endpoint(sessions, endpoint_id) -> WebhookEndpoint:
    with sessions() as s:
        return s.get(WebhookEndpoint, endpoint_id)


def failing_for(sessions, endpoint_id, age: timedelta) -> None:
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id).values(failing_since=utcnow() - age)
        )


def test_an_endpoint_failing_for_three_days_is_disabled_emailed_and_re_enabled(
    sessions, merchant, dispatcher, receiver, notifier, client
):
    hook = add_endpoint(sessions, merchant.id, receiver.url)
    receiver.fail(1000, status=503)
    failing_for(sessions, hook.id, timedelta(days=3, minutes=5))
    [did] = intake(sessions, add_event(sessions, merchant.id))
    dispatcher()
    off = until(lambda: (e := endpoint(sessions, hook.id)).disabled_at is not None and e, message="disabled")
    assert off.active is False
    until(settled(sessions, did, "FAILED"), message="the delivery gives up once its endpoint is off")

    mail = until(lambda: notifier.to(merchant.email), timeout=20, message="the disabled endpoint email")[0]
    body = mail.get_body(("plain",)).get_content()
    assert "disabled" in mail["Subject"] and receiver.url in body and '"active": true' in body

    r = client.patch(f"{API}/webhooks/{hook.id}", json={"active": True}, headers=merchant.headers())
    assert r.status_code == 200, r.get_data(as_text=True)
    back = endpoint(sessions, hook.id)
    assert back.active and back.failing_since is None and back.disabled_at is None


def test_a_shorter_streak_is_kept_and_a_success_ends_it(sessions, merchant, dispatcher, receiver):
    hook = add_endpoint(sessions, merchant.id, receiver.url)
    failing_for(sessions, hook.id, timedelta(days=2, hours=23))
    receiver.fail(2, status=500)
    [did] = intake(sessions, add_event(sessions, merchant.id))
    dispatcher()
    until(settled(sessions, did), message="delivered on the third attempt")
    after = endpoint(sessions, hook.id)
    assert after.active and after.disabled_at is None and after.failing_since is None
    assert [h.status for h in receiver.hits] == [500, 500, 200]


def test_a_first_failure_starts_the_streak(sessions, merchant, dispatcher, receiver):
    hook = add_endpoint(sessions, merchant.id, receiver.url)
    receiver.fail(1000, status=500)
    intake(sessions, add_event(sessions, merchant.id))
    dispatcher()
    started = until(lambda: endpoint(sessions, hook.id).failing_since, message="the streak starts")
    assert utcnow() - started < timedelta(minutes=1) and endpoint(sessions, hook.id).active


def test_the_dashboard_re_enables_a_disabled_endpoint(sessions, client):
    email = merchant_with_password(sessions)
    with sessions() as s:
        from kassa_common.models import Merchant

        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == email))
    hook = add_endpoint(sessions, merchant_id, "https://hooks.example.com/x", active=False)
    with unit_of_work(sessions) as s:
        row = s.get(WebhookEndpoint, hook.id)
        row.failing_since, row.disabled_at = utcnow() - timedelta(days=4), utcnow()
    log_in(client, email)
    page = client.get(f"/dashboard/webhooks/{hook.id}")
    assert page.status_code == 200 and 'id="disabled-failing"' in page.get_data(as_text=True)
    r = client.post(f"/dashboard/webhooks/{hook.id}/active", data={"csrf_token": csrf_of(page)})
    assert r.status_code in (200, 303), r.get_data(as_text=True)
    back = endpoint(sessions, hook.id)
    assert back.active and back.failing_since is None and back.disabled_at is None
