"""/webhooks CRUD, secrets and URL rules, against real PostgreSQL."""

from __future__ import annotations

import secrets
import uuid

import pytest

from kassa_common.messaging.messages import WEBHOOK_EVENTS
from kassa_common.models import WebhookEndpoint
from kassa_api.app import create_app
from tests.support.api import API, assert_error, detail_fields

FIELDS = {"id", "url", "events", "active", "description", "test_mode", "created_at", "updated_at"}


def url(scheme="https", host="hooks.example.com") -> str:
    return f"{scheme}://{host}/kassa/{secrets.token_hex(4)}"


def post(client, merchant, body, mode="test"):
    return client.post(f"{API}/webhooks", json=body, headers=merchant.headers(mode))


def get(client, merchant, wid, mode="test"):
    return client.get(f"{API}/webhooks/{wid}", headers=merchant.headers(mode))


def patch(client, merchant, wid, body, mode="test"):
    return client.patch(f"{API}/webhooks/{wid}", json=body, headers=merchant.headers(mode))


def rotate(client, merchant, wid, mode="test"):
    return client.post(f"{API}/webhooks/{wid}/rotate-secret", headers=merchant.headers(mode))


def listing(client, merchant, mode="test", **query):
    r = client.get(f"{API}/webhooks", query_string=query, headers=merchant.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.json


def stored_secret(sessions, wid: str) -> str:
    with sessions() as s:
        return s.get(WebhookEndpoint, uuid.UUID(wid)).secret


# ---- create -------------------------------------------------------------------------------


def test_create_returns_the_webhook_with_its_secret_once(client, merchant, sessions):
    target = url()
    r = post(client, merchant, {"url": target, "description": "orders"})
    assert r.status_code == 201 and r.json["success"] is True and r.json["statusCode"] == 201
    hook = r.json["data"]
    assert set(hook) == FIELDS | {"secret"}
    assert hook["url"] == target and hook["description"] == "orders" and hook["active"] is True
    assert hook["test_mode"] is True
    assert hook["secret"].startswith("whsec_") and len(hook["secret"]) >= 32
    assert stored_secret(sessions, hook["id"]) == hook["secret"]


def test_events_default_to_all(client, merchant):
    hook = post(client, merchant, {"url": url()}).json["data"]
    assert sorted(hook["events"]) == sorted(WEBHOOK_EVENTS)


def test_events_can_be_chosen_and_duplicates_collapse(client, merchant):
    hook = post(
        client, merchant, {"url": url(), "events": ["payment.completed", "payment.canceled", "payment.completed"]}
    ).json["data"]
    assert sorted(hook["events"]) == ["payment.canceled", "payment.completed"]


def test_create_inactive_webhook(client, merchant):
    assert post(client, merchant, {"url": url(), "active": False}).json["data"]["active"] is False


@pytest.mark.parametrize(
    "body, field",
    [
        ({"events": ["payment.refunded"]}, "events.0"),
        ({"events": ["payment.completed", "PAYMENT.COMPLETED"]}, "events.1"),
        ({"events": []}, "events"),
        ({"events": "payment.completed"}, "events"),
        ({"events": ["webhook.test"]}, "events.0"),
        ({"url": None}, "url"),
        ({"url": "ftp://hooks.example.com/x"}, "url"),
        ({"url": "hooks.example.com/x"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://[::1/x"}, "url"),
        ({"url": "https://example.com:70000/x"}, "url"),
        ({"url": "https://example.com:0/x"}, "url"),
        ({"url": "https://example.com/" + "x" * 2100}, "url"),
        ({"secret": "whsec_mine"}, "secret"),
        ({"active": "true"}, "active"),
        ({"description": "d" * 501}, "description"),
    ],
    ids=[
        "unknown event",
        "event in wrong case",
        "no events",
        "events not a list",
        "webhook.test not subscribable",
        "url missing",
        "ftp url",
        "relative url",
        "url without host",
        "broken ipv6 url",
        "port out of range",
        "port zero",
        "url too long",
        "secret chosen by client",
        "active not boolean",
        "description too long",
    ],
)
def test_invalid_webhook_is_validation_error(client, merchant, body, field):
    full = {k: v for k, v in {"url": url(), **body}.items() if v is not None}
    error = assert_error(post(client, merchant, full), 400, "VALIDATION_ERROR")
    assert field in detail_fields(error), error


# ---- URL rules per mode ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "http://hooks.example.com/x",
        "https://hooks.example.com/x",
        "http://127.0.0.1:9000/hook",
        "http://localhost:8080/hook",
    ],
)
def test_test_mode_accepts_http_and_https(client, merchant, target):
    assert post(client, merchant, {"url": target}).status_code == 201


def test_live_mode_requires_https(client, merchant):
    error = assert_error(post(client, merchant, {"url": url("http")}, mode="live"), 400, "VALIDATION_ERROR")
    assert "https" in error["message"] and detail_fields(error) == {"url"}
    assert post(client, merchant, {"url": url("https")}, mode="live").status_code == 201


@pytest.mark.parametrize("host", ["127.0.0.1:9000", "localhost:8080", "10.1.2.3", "192.168.0.10:8000", "[::1]:9000"])
def test_live_mode_allows_plain_http_to_private_hosts_when_private_urls_are_allowed(client, merchant, settings, host):
    assert settings.sender.webhook_allow_private_urls is True
    r = post(client, merchant, {"url": f"http://{host}/hook"}, mode="live")
    assert r.status_code == 201, r.json


def test_live_mode_https_check_applies_to_updates(client, merchant, create_webhook):
    hook = create_webhook(merchant, mode="live")
    assert_error(patch(client, merchant, hook["id"], {"url": url("http")}, mode="live"), 400, "VALIDATION_ERROR")
    assert get(client, merchant, hook["id"], mode="live").json["data"]["url"] == hook["url"]


@pytest.fixture(scope="module")
def strict_client(settings, engine):
    """An instance run the production way: no private webhook destinations."""
    return create_app(settings.with_(sender={"webhook_allow_private_urls": False}), engine=engine).test_client()


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:9000/hook",
        "https://localhost/hook",
        "https://api.localhost/x",
        "http://10.0.0.5/hook",
        "https://192.168.1.10/hook",
        "https://172.16.0.1/hook",
        "https://169.254.169.254/latest",
        "https://[::1]/hook",
        "https://[fd00::1]/hook",
        "https://0.0.0.0/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://100.64.0.1/hook",
        "https://100.127.255.254/hook",
        "https://192.0.0.8/hook",
        "https://198.18.0.1/hook",
        "https://198.19.255.1/hook",
        "https://224.0.0.251/hook",
        "https://240.0.0.1/hook",
        "https://[::ffff:10.0.0.1]/hook",
        "https://[2002:7f00:1::1]/hook",
        "https://[64:ff9b::a00:1]/hook",
        "https://100.100.100.200/latest",
    ],
)
@pytest.mark.parametrize("mode", ["test", "live"])
def test_private_destinations_are_refused_unless_allowed(strict_client, merchant, target, mode):
    r = strict_client.post(f"{API}/webhooks", json={"url": target}, headers=merchant.headers(mode))
    assert "url" in detail_fields(assert_error(r, 400, "VALIDATION_ERROR"))


def test_private_destination_refused_on_update_too(strict_client, merchant, create_webhook):
    hook = create_webhook(merchant)
    r = strict_client.patch(
        f"{API}/webhooks/{hook['id']}", json={"url": "http://127.0.0.1/x"}, headers=merchant.headers()
    )
    assert_error(r, 400, "VALIDATION_ERROR")


def test_public_destinations_pass_when_private_urls_are_refused(strict_client, merchant):
    r = strict_client.post(f"{API}/webhooks", json={"url": url()}, headers=merchant.headers("live"))
    assert r.status_code == 201


# ---- read, list, secret visibility --------------------------------------------------------


def test_get_list_and_update_never_show_the_secret(client, merchant, create_webhook):
    hook = create_webhook(merchant)
    got = get(client, merchant, hook["id"]).json["data"]
    assert set(got) == FIELDS and got == {k: v for k, v in hook.items() if k != "secret"}
    assert all(set(h) == FIELDS for h in listing(client, merchant)["data"])
    assert set(patch(client, merchant, hook["id"], {"description": "x"}).json["data"]) == FIELDS


def test_list_envelope_newest_first_with_pagination(client, merchant, create_webhook):
    made = [create_webhook(merchant)["id"] for _ in range(3)]
    body = listing(client, merchant, pageSize=2)
    assert set(body) == {"success", "statusCode", "data", "meta"}
    assert [h["id"] for h in body["data"]] == made[::-1][:2]
    assert body["meta"] == {"page": 1, "pageSize": 2, "total": 3, "pages": 2}
    assert [h["id"] for h in listing(client, merchant, pageSize=2, page=2)["data"]] == made[:1]


def test_unknown_webhook_is_not_found(client, merchant):
    for ref in (str(uuid.uuid4()), "whatever"):
        assert_error(get(client, merchant, ref), 404, "NOT_FOUND")


# ---- rotate-secret --------------------------------------------------------------------------


def test_rotate_secret_returns_a_new_secret_and_stores_it(client, merchant, create_webhook, sessions):
    hook = create_webhook(merchant)
    r = rotate(client, merchant, hook["id"])
    assert r.status_code == 200 and r.json["success"] is True
    rotated = r.json["data"]
    assert set(rotated) == FIELDS | {"secret"}
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != hook["secret"]
    assert stored_secret(sessions, hook["id"]) == rotated["secret"]
    assert rotate(client, merchant, hook["id"]).json["data"]["secret"] not in (hook["secret"], rotated["secret"])


def test_rotate_secret_of_another_merchants_webhook_is_not_found_and_keeps_it(
    client, make_merchant, create_webhook, sessions
):
    owner, stranger = make_merchant(), make_merchant()
    hook = create_webhook(owner)
    assert_error(rotate(client, stranger, hook["id"]), 404, "NOT_FOUND")
    assert stored_secret(sessions, hook["id"]) == hook["secret"]


# ---- update ---------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(client, merchant, create_webhook):
    hook = create_webhook(merchant, description="first")
    r = patch(client, merchant, hook["id"], {"events": ["payment.expired"], "active": False})
    assert r.status_code == 200, r.json
    updated = r.json["data"]
    assert updated["events"] == ["payment.expired"] and updated["active"] is False
    assert (updated["url"], updated["description"], updated["created_at"]) == (hook["url"], "first", hook["created_at"])
    new_url = url()
    assert patch(client, merchant, hook["id"], {"url": new_url}).json["data"]["url"] == new_url
    assert get(client, merchant, hook["id"]).json["data"]["events"] == ["payment.expired"]


def test_patch_null_description_clears_it(client, merchant, create_webhook):
    hook = create_webhook(merchant, description="to go")
    assert patch(client, merchant, hook["id"], {"description": None}).json["data"]["description"] is None


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": None}, "url"),
        ({"events": None}, "events"),
        ({"active": None}, "active"),
        ({"events": ["nope"]}, "events.0"),
        ({"url": "mailto:a@b.c"}, "url"),
    ],
    ids=["null url", "null events", "null active", "unknown event", "not http"],
)
def test_invalid_patch_is_validation_error_and_changes_nothing(client, merchant, create_webhook, body, field):
    hook = create_webhook(merchant)
    assert field in detail_fields(assert_error(patch(client, merchant, hook["id"], body), 400, "VALIDATION_ERROR"))
    assert get(client, merchant, hook["id"]).json["data"] == {k: v for k, v in hook.items() if k != "secret"}


# ---- delete ---------------------------------------------------------------------------------


def test_delete_answers_deleted_true_then_the_webhook_is_gone(client, merchant, create_webhook):
    keep, gone = create_webhook(merchant), create_webhook(merchant)
    r = client.delete(f"{API}/webhooks/{gone['id']}", headers=merchant.headers())
    assert r.status_code == 200 and r.json == {"success": True, "data": {"deleted": True}}
    assert_error(get(client, merchant, gone["id"]), 404, "NOT_FOUND")
    assert [h["id"] for h in listing(client, merchant)["data"]] == [keep["id"]]
    assert_error(rotate(client, merchant, gone["id"]), 404, "NOT_FOUND")
    assert_error(patch(client, merchant, gone["id"], {"active": True}), 404, "NOT_FOUND")
    assert_error(client.delete(f"{API}/webhooks/{gone['id']}", headers=merchant.headers()), 404, "NOT_FOUND")


# ---- modes ----------------------------------------------------------------------------------


def test_webhooks_are_per_mode(client, merchant, create_webhook):
    test_hook, live_hook = create_webhook(merchant), create_webhook(merchant, mode="live")
    assert live_hook["test_mode"] is False
    assert [h["id"] for h in listing(client, merchant)["data"]] == [test_hook["id"]]
    assert [h["id"] for h in listing(client, merchant, mode="live")["data"]] == [live_hook["id"]]
    assert_error(get(client, merchant, live_hook["id"]), 404, "NOT_FOUND")
    assert_error(get(client, merchant, test_hook["id"], mode="live"), 404, "NOT_FOUND")
    assert_error(rotate(client, merchant, live_hook["id"]), 404, "NOT_FOUND")
    assert_error(client.delete(f"{API}/webhooks/{test_hook['id']}", headers=merchant.headers("live")), 404, "NOT_FOUND")
    assert get(client, merchant, test_hook["id"]).status_code == 200
