"""GET /webhooks/:id/deliveries, POST .../redeliver and POST /webhooks/:id/test, through the
Flask client on real PostgreSQL, with a real dispatcher and receiver."""

from __future__ import annotations

import json
import uuid

from kassa_common.models import Event
from kassa_common.webhooks.signing import verify_signature
from tests.support.api import new_key
from tests.support.receiver import receiver  # noqa: F401  (fixture)
from tests.support.wait import until
from tests.support.webhooks import add_event, count_settled, delivery, dispatcher, intake, settled  # noqa: F401  (fixture)

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
    assert set(retried) == {
        "id",
        "webhook_id",
        "event_id",
        "event",
        "status",
        "attempts",
        "last_status_code",
        "last_error",
        "next_attempt_at",
        "created_at",
        "updated_at",
        "attempts_log",
    }
    assert log_of(client, merchant, hook["id"], "?status=FAILED")["data"] == []
    assert (
        client.get(f"{API}/webhooks/{hook['id']}/deliveries?pageSize=101", headers=merchant.headers()).status_code
        == 400
    )


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


def test_delivery_endpoints_never_reveal_other_merchants_modes_or_endpoints(client, sessions, make_merchant, receiver):
    m, other = make_merchant(), make_merchant()
    mine, sibling = api_webhook(client, m, receiver.url), api_webhook(client, m, receiver.url)
    theirs = api_webhook(client, other, receiver.url)
    [did] = [
        i
        for i in intake(sessions, add_event(sessions, m.id))
        if delivery(sessions, i).endpoint_id == uuid.UUID(mine["id"])
    ]
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
    assert (
        client.patch(f"{API}/webhooks/{hook['id']}", json={"active": False}, headers=merchant.headers()).status_code
        == 200
    )
    for path in (f"/webhooks/{hook['id']}/test", f"/webhooks/{hook['id']}/deliveries/{did}/redeliver"):
        r = client.post(API + path, headers=merchant.headers())
        assert r.status_code == 422 and r.get_json()["error"]["code"] == "UNPROCESSABLE_ENTITY", path


def test_delivery_endpoints_need_the_webhooks_scope(client, sessions, merchant, receiver):
    hook = api_webhook(client, merchant, receiver.url)
    key = new_key(sessions, merchant.id, "test", ["payments:read"])
    for method, path in (("get", "deliveries"), ("post", "test")):
        r = getattr(client, method)(f"{API}/webhooks/{hook['id']}/{path}", headers={"X-Api-Key": key})
        assert r.status_code == 403 and r.get_json()["error"]["code"] == "FORBIDDEN"
