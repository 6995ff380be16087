"""Every operation of the published document against every way a caller can be wrong:
exactly the documented status, and no other merchant's data in any answer.

The operations come from the OpenAPI document itself, so a new endpoint is in the matrix
the day it is added. The objects named in paths belong to another merchant, or to the
caller in the other mode: both must be a 404 that says nothing of them (DESIGN §3).
"""

from __future__ import annotations

import json
import re
import secrets
import uuid

import pytest

from kassa_common import audit, payments
from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Event, WebhookDelivery
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from tests.support.api import API, PAYMENT, set_live_wallet
from tests.support.transfers import report

BODIES = {
    ("post", "/payments"): PAYMENT,
    ("post", "/products"): {"name": "Mug", "price": 5},
    ("patch", "/products/{ref}"): {"name": "Mug"},
    ("post", "/webhooks"): {"url": "https://h.example.com/k"},
    ("patch", "/webhooks/{ref}"): {"description": "x"},
    ("post", "/refunds/{ref}/complete"): {"transaction_hash": "0x" + "ab" * 32},
}
CALLERS = [
    "no key",
    "malformed",
    "unknown",
    "revoked",
    "wrong scope",
    "banned",
    "unactivated",
    "other merchant's object",
    "other mode's object",
]


def operations(app) -> list[tuple[str, str, str]]:
    doc = app.test_client().get(f"{API}/openapi.json").get_json()
    return [
        (method, path, re.search(r"`([^`]+)`", op["description"]).group(1))
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if op.get("security")
    ]


def objects_of(client, sessions, key: str, mode: str) -> dict[str, str]:
    """A payment, product, webhook, webhook delivery, event and refund of the key's merchant and mode."""
    h = {"X-Api-Key": key}
    payment = client.post(
        f"{API}/payments", json={**PAYMENT, "network": "LOCAL_EVM"} if mode == "live" else PAYMENT, headers=h
    ).get_json()["data"]
    product = client.post(f"{API}/products", json={"name": "Secret mug", "price": 7}, headers=h).get_json()["data"]
    hook = client.post(f"{API}/webhooks", json={"url": "https://secret.example.com/k"}, headers=h).get_json()["data"]
    paid = client.post(
        f"{API}/payments", json={**PAYMENT, "network": "LOCAL_EVM"} if mode == "live" else PAYMENT, headers=h
    ).get_json()["data"]
    with unit_of_work(sessions) as s:  # confirmed funds, so that it can be refunded
        payments.settle(s, report(paid, TransferStatus.CONFIRMED, 1_000_000, 10))
    refund = client.post(f"{API}/payments/{paid['id']}/refunds", json={}, headers=h).get_json()["data"]
    with unit_of_work(sessions) as s:
        event_id = s.query(Event.id).filter(Event.payment_id == uuid.UUID(payment["id"])).scalar()
        delivery = WebhookDelivery(
            id=uuid.uuid4(),
            endpoint_id=uuid.UUID(hook["id"]),
            event_id=event_id,
            event_type="payment.created",
            status="SUCCEEDED",
            attempts=1,
            created_at=utcnow(),
            updated_at=utcnow(),
        )
        s.add(delivery)
    return {
        "payment": payment["id"],
        "product": product["id"],
        "webhook": hook["id"],
        "delivery": str(delivery.id),
        "event": event_id,
        "short_id": payment["short_id"],
        "refund": refund["id"],
    }


@pytest.fixture(scope="module")
def world(app, sessions):
    """The caller (merchant A, keys of every kind) and what its requests must never reach."""
    client = app.test_client()
    with unit_of_work(sessions) as s:
        a = merchants.create_merchant(s, f"a-{secrets.token_hex(5)}@example.com", None, "Caller", True)
        b = merchants.create_merchant(s, f"b-{secrets.token_hex(5)}@example.com", None, "Other", True)
        banned = merchants.create_merchant(s, f"x-{secrets.token_hex(5)}@example.com", None, "Banned", True)
        banned.banned = True
        idle = merchants.create_merchant(s, f"i-{secrets.token_hex(5)}@example.com", None, "Idle", False)
        mode_keys = {mode: keys.create_key(s, a.id, mode, list(keys.SCOPES)).key for mode in ("test", "live")}
        b_key = keys.create_key(s, b.id, "test", list(keys.SCOPES)).key
        revoked = keys.create_key(s, a.id, "test", list(keys.SCOPES))
        keys.revoke_key(s, a.id, revoked.row.id, actor=audit.OPERATOR)
        single = {scope: keys.create_key(s, a.id, "test", [scope]).key for scope in keys.SCOPES}
        others = {
            "banned": keys.create_key(s, banned.id, "test", list(keys.SCOPES)).key,
            "unactivated": keys.create_key(s, idle.id, "test", list(keys.SCOPES)).key,
            "revoked": revoked.key,
        }
        ids = (a.id, b.id, b.email)
    set_live_wallet(sessions, ids[0])
    return {
        "client": client,
        "keys": mode_keys,
        "single": single,
        "others": others,
        "b_email": ids[2],
        "b": objects_of(client, sessions, b_key, "test"),  # another merchant's, same mode
        "a_live": objects_of(client, sessions, mode_keys["live"], "live"),
    }  # the caller's, other mode


def fill(path: str, objs: dict[str, str]) -> str:
    kind = path.split("/")[1].rstrip("s")  # payments -> payment, events -> event, …
    return (
        path.replace("{ref}", objs[kind])
        .replace("{event_id}", objs["event"])
        .replace("{delivery_id}", objs["delivery"])
    )


def secrets_of(objs: dict[str, str]) -> set[str]:
    return {v for k, v in objs.items()} | {"Secret mug", "secret.example.com"}


@pytest.mark.parametrize("caller", CALLERS)
def test_every_operation_answers_each_wrong_caller_with_the_documented_status(app, world, caller):
    client, checked = world["client"], 0
    for method, path, scope in operations(app):
        key = world["keys"]["test"]
        objs = world["a_live"] if caller == "other mode's object" else world["b"]
        expected = {
            "no key": 401,
            "malformed": 401,
            "unknown": 401,
            "revoked": 401,
            "banned": 401,
            "unactivated": 401,
            "wrong scope": 403,
        }.get(caller, 404)
        if expected == 404 and "{" not in path:
            continue  # no object in the path: nothing of another's to reach
        if caller == "no key":
            headers = {}
        elif caller == "malformed":
            headers = {"X-Api-Key": "not-a-key"}
        elif caller == "unknown":
            headers = {"X-Api-Key": "kassa_test_" + secrets.token_urlsafe(32)}
        elif caller in world["others"]:
            headers = {"X-Api-Key": world["others"][caller]}
        elif caller == "wrong scope":
            headers = {"X-Api-Key": world["single"][next(s for s in keys.SCOPES if s != scope)]}
        else:
            headers = {"X-Api-Key": key}
        url = API + (fill(path, objs) if "{" in path else path)
        r = client.open(url, method=method.upper(), json=BODIES.get((method, path)), headers=headers)
        body = r.get_data(as_text=True)
        assert r.status_code == expected, f"{method.upper()} {path} as {caller}: {r.status_code} {body[:300]}"
        error = json.loads(body)["error"]
        assert (
            error["status"] == expected
            and error["code"] == {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND"}[expected]
        )
        leaked = [s for s in secrets_of(world["b"]) | secrets_of(world["a_live"]) | {world["b_email"]} if s in body]
        assert not leaked, f"{method.upper()} {path} as {caller} shows {leaked}"
        checked += 1
    assert checked >= (7 if caller.startswith("other") else 20)


def test_the_lists_of_the_caller_hold_nothing_of_another_merchant_or_mode(app, world):
    client, h = world["client"], {"X-Api-Key": world["keys"]["test"]}
    for path in ("/payments", "/products", "/webhooks", "/events"):
        body = client.get(API + path, headers=h).get_data(as_text=True)
        leaked = [s for s in secrets_of(world["b"]) | secrets_of(world["a_live"]) if s in body]
        assert not leaked, f"GET {path} shows {leaked}"
