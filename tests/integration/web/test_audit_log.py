"""The audit log (DESIGN §14): a change of money or access made through the API or the
dashboard leaves one row naming who (the key or the account), what, which object, from
where (the client address behind trusted proxies, the user agent) and when, in the change's
own transaction; the owners read it on /dashboard/audit and export it as CSV, nobody else."""

from __future__ import annotations

import csv
import io
import re
import secrets
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common import audit, retention
from kassa_common.accounts import keys, merchants, stores, wallet_changes
from kassa_common.db import unit_of_work
from kassa_common.ids import hash_api_key
from kassa_common.models import ApiKey, AuditEntry, WalletChange
from kassa_common.timefmt import utcnow
from tests.support.api import API, PAYMENT
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password
from tests.support.keys import fresh_key

PROXY_SAW = "203.0.113.9"
AGENT = "audit-test/1.0"


def entries(sessions, store_id: uuid.UUID, action: str | None = None) -> list[AuditEntry]:
    with sessions() as s:
        query = sa.select(AuditEntry).where(AuditEntry.store_id == store_id)
        if action:
            query = query.where(AuditEntry.action == action)
        return list(s.scalars(query.order_by(AuditEntry.created_at, AuditEntry.id)))


def key_row(sessions, key: str) -> ApiKey:
    with sessions() as s:
        return s.scalars(sa.select(ApiKey).where(ApiKey.key_hash == hash_api_key(key))).one()


@pytest.fixture
def behind_proxy(settings, engine):
    """The app behind one trusted reverse proxy: the client address is the one it saw."""
    from kassa_api.app import create_app

    return create_app(settings.with_(web={"trusted_proxies": 1}), engine=engine).test_client()


def signed_in(app_or_client, email: str):
    client = app_or_client.test_client() if hasattr(app_or_client, "test_client") else app_or_client
    log_in(client, email)
    client.token = csrf_of(client.get("/dashboard/stores"))
    return client


def store_of(sessions, email: str) -> uuid.UUID:
    with sessions() as s:
        return merchants.merchant_by_email(s, email).id


# ---- through the API ------------------------------------------------------------------------


def test_api_changes_are_recorded_with_the_key_the_object_and_the_address_the_proxy_saw(
    behind_proxy, merchant, sessions
):
    headers = {**merchant.headers(), "X-Forwarded-For": PROXY_SAW, "User-Agent": AGENT}
    hook = behind_proxy.post(f"{API}/webhooks", json={"url": "https://shop.example.com/hook"}, headers=headers)
    assert hook.status_code == 201, hook.get_data(as_text=True)
    hook_id = hook.get_json()["data"]["id"]
    assert behind_proxy.patch(f"{API}/webhooks/{hook_id}", json={"active": False}, headers=headers).status_code == 200
    assert behind_proxy.delete(f"{API}/webhooks/{hook_id}", headers=headers).status_code == 200
    product = behind_proxy.post(f"{API}/products", json={"name": "Mug", "price": 9.5}, headers=headers)
    assert product.status_code == 201
    payment = behind_proxy.post(f"{API}/payments", json=PAYMENT, headers=headers).get_json()["data"]
    assert behind_proxy.post(f"{API}/payments/{payment['id']}/cancel", headers=headers).status_code == 200

    key = key_row(sessions, merchant.test_key)
    rows = [e for e in entries(sessions, merchant.id) if e.actor_kind == "api_key"]
    assert [(e.action, e.object_type) for e in rows] == [
        ("webhook.created", "webhook"),
        ("webhook.updated", "webhook"),
        ("webhook.deleted", "webhook"),
        ("product.created", "product"),
        ("payment.canceled", "payment"),
    ]
    assert {e.object_id for e in rows[:3]} == {hook_id}
    assert rows[3].object_id == product.get_json()["data"]["id"] and rows[4].object_id == payment["id"]
    assert {(e.actor_id, e.actor_label, e.ip, e.user_agent) for e in rows} == {(key.id, key.prefix, PROXY_SAW, AGENT)}
    assert "test: https://shop.example.com/hook" == rows[0].detail
    assert "active changed" in (rows[1].detail or "")
    assert payment["short_id"] in (rows[4].detail or "")


def test_without_a_trusted_proxy_a_forwarded_address_is_not_believed(client, merchant, sessions):
    headers = {**merchant.headers(), "X-Forwarded-For": PROXY_SAW}
    assert client.post(f"{API}/products", json={"name": "Cup", "price": 3}, headers=headers).status_code == 201
    (row,) = entries(sessions, merchant.id, "product.created")[-1:]
    assert row.ip == "127.0.0.1"  # the connection's own address


def test_a_refused_change_writes_no_row(client, merchant, sessions):
    before = len(entries(sessions, merchant.id))
    product = client.post(f"{API}/products", json={"name": "Cap", "price": 4}, headers=merchant.headers())
    ref = product.get_json()["data"]["id"]
    refused = client.patch(f"{API}/products/{ref}", json={"price": None}, headers=merchant.headers())
    assert refused.status_code == 400
    other = client.delete(f"{API}/products/{uuid.uuid4()}", headers=merchant.headers())
    assert other.status_code == 404
    assert [e.action for e in entries(sessions, merchant.id)[before:]] == ["product.created"]


def test_a_rolled_back_change_leaves_no_row_and_a_row_means_the_change_happened(sessions, merchant):
    """The row is in the change's own transaction: rolled back together, committed together."""
    actor = audit.Actor("account", uuid.uuid4(), "someone@example.com", "198.51.100.1", AGENT)
    with pytest.raises(RuntimeError), unit_of_work(sessions) as s:
        made = keys.create_key(s, merchant.id, "test", ["payments:read"], "rolled back", actor=actor)
        raise RuntimeError("something after the change failed")
    with sessions() as s:
        assert s.get(ApiKey, made.row.id) is None
    assert [e for e in entries(sessions, merchant.id) if e.object_id == str(made.row.id)] == []

    with unit_of_work(sessions) as s:
        kept = keys.create_key(s, merchant.id, "test", ["payments:read"], "kept", actor=actor).row.id
    (row,) = [e for e in entries(sessions, merchant.id) if e.object_id == str(kept)]
    assert (row.action, row.actor_label, row.ip) == ("api_key.created", "someone@example.com", "198.51.100.1")


# ---- through the dashboard ------------------------------------------------------------------


def test_dashboard_changes_are_recorded_with_the_account(app, behind_proxy, sessions):
    owner, other = merchant_with_password(sessions), merchant_with_password(sessions)
    store_id = store_of(sessions, owner)
    with unit_of_work(sessions) as s:
        stores.set_member(s, store_id, stores.account_by_email(s, other), "manager", actor=audit.OPERATOR)
        owner_id, other_id = stores.account_by_email(s, owner).id, stores.account_by_email(s, other).id
    dash = signed_in(behind_proxy, owner)
    sent = {"headers": {"X-Forwarded-For": PROXY_SAW, "User-Agent": AGENT}}
    made = dash.post(
        "/dashboard/keys", data={"csrf_token": dash.token, "mode": "test", "scopes": "payments:read"}, **sent
    )
    assert made.status_code == 200
    with sessions() as s:
        key_id = s.scalars(
            sa.select(ApiKey.id).where(ApiKey.merchant_id == store_id).order_by(ApiKey.created_at.desc())
        ).first()
    form = {"csrf_token": dash.token, "confirm": "yes"}
    assert dash.post(f"/dashboard/keys/{key_id}/revoke", data=form, **sent).status_code == 303
    role = {"csrf_token": dash.token, "role": "viewer"}
    assert dash.post(f"/dashboard/members/{other_id}/role", data=role, **sent).status_code == 303
    assert dash.post(f"/dashboard/members/{other_id}/remove", data=form, **sent).status_code == 303
    wallet = {"csrf_token": dash.token, "chain": "evm", "xpub": fresh_key()}
    assert dash.post("/dashboard/wallets", data=wallet, **sent).status_code == 200  # test mode: at once

    rows = [e for e in entries(sessions, store_id) if e.actor_kind == "account"]
    assert [(e.action, e.object_type, e.object_id) for e in rows] == [
        ("api_key.created", "api_key", str(key_id)),
        ("api_key.revoked", "api_key", str(key_id)),
        ("member.role_changed", "account", str(other_id)),
        ("member.removed", "account", str(other_id)),
        ("wallet.changed", "wallet", "test/evm"),
    ]
    assert {(e.actor_id, e.actor_label, e.ip, e.user_agent) for e in rows} == {(owner_id, owner, PROXY_SAW, AGENT)}
    assert rows[2].detail == f"{other}: manager to viewer"
    (added,) = entries(sessions, store_id, "member.added")
    assert (added.actor_kind, added.actor_label, added.ip) == ("operator", "kassa command line", None)


def test_a_held_live_wallet_change_its_cancel_and_its_application_are_recorded(settings, engine, sessions):
    from kassa_api.app import create_app

    configured = settings.with_(kassa_env="production", web={"secret_key": secrets.token_urlsafe(32)})
    owner = merchant_with_password(sessions)
    store_id = store_of(sessions, owner)
    dash = signed_in(create_app(configured, engine=engine), owner)
    r = dash.post("/dashboard/mode", data={"csrf_token": dash.token, "mode": "live", "next": "/dashboard/wallets"})
    assert r.status_code == 303
    ask = {"csrf_token": dash.token, "chain": "evm", "xpub": fresh_key(), "password": PASSWORD}
    assert dash.post("/dashboard/wallets", data=ask).status_code == 200  # held: live, production
    with sessions() as s:
        first = s.scalars(sa.select(WalletChange).where(WalletChange.merchant_id == store_id)).one()
    assert (
        dash.post(f"/dashboard/wallets/pending/{first.id}/cancel", data={"csrf_token": dash.token}).status_code == 303
    )
    assert dash.post("/dashboard/wallets", data={**ask, "xpub": fresh_key()}).status_code == 200
    with unit_of_work(sessions) as s:
        second = s.scalars(
            sa.select(WalletChange).where(WalletChange.merchant_id == store_id, WalletChange.canceled_at.is_(None))
        ).one()
        second.applies_at = utcnow() - timedelta(seconds=1)
        second_id = second.id
    with unit_of_work(sessions) as s:
        assert wallet_changes.apply_due(s) >= 1

    rows = [(e.action, e.object_id, e.actor_kind) for e in entries(sessions, store_id) if e.action.startswith("wallet")]
    assert rows == [
        ("wallet.change_requested", str(first.id), "account"),
        ("wallet.change_canceled", str(first.id), "account"),
        ("wallet.change_requested", str(second_id), "account"),
        ("wallet.change_applied", str(second_id), "system"),
    ]


# ---- the page and the CSV -------------------------------------------------------------------


def test_the_owner_pages_filters_and_exports_the_log_and_nobody_else_may(app, sessions):
    owner, manager = merchant_with_password(sessions), merchant_with_password(sessions)
    store_id = store_of(sessions, owner)
    with unit_of_work(sessions) as s:
        stores.set_member(s, store_id, stores.account_by_email(s, manager), "manager", actor=audit.OPERATOR)
    dash = signed_in(app, owner)
    made = dash.post(
        "/dashboard/keys",
        data={"csrf_token": dash.token, "mode": "test", "scopes": "payments:read"},
        headers={"User-Agent": '=HYPERLINK("http://evil.example")'},
    )
    assert made.status_code == 200

    page = dash.get("/dashboard/audit")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "api_key.created" in text and "member.added" in text
    assert 'href="/dashboard/audit"' in text  # in the owner's navigation
    only = dash.get("/dashboard/audit?action=member.added").get_data(as_text=True)
    assert "member.added" in only and '<strong class="audit-action">api_key.created' not in only
    assert dash.get("/dashboard/audit?action=nonsense").status_code == 400

    exported = dash.get("/dashboard/audit.csv")
    assert exported.status_code == 200 and exported.mimetype == "text/csv"
    assert "attachment" in exported.headers["Content-Disposition"]
    table = list(csv.reader(io.StringIO(exported.get_data(as_text=True))))
    assert tuple(table[0]) == audit.COLUMNS
    rows = [dict(zip(table[0], r, strict=True)) for r in table[1:]]
    assert [r["action"] for r in rows] == ["api_key.created", "member.added"]  # newest first
    assert rows[0]["actor"] == owner and rows[0]["actor_kind"] == "account" and rows[0]["ip"] == "127.0.0.1"
    assert rows[0]["user_agent"] == '\'=HYPERLINK("http://evil.example")'  # defused for spreadsheets
    assert rows[1]["detail"] == f"{manager} as manager"
    filtered = list(
        csv.reader(io.StringIO(dash.get("/dashboard/audit.csv?action=member.added").get_data(as_text=True)))
    )
    assert [r[1] for r in filtered[1:]] == ["member.added"]

    theirs = signed_in(app, manager)  # its own store opens first: open the owner's, where it manages
    opened = theirs.post(f"/dashboard/stores/{store_id}/switch", data={"csrf_token": theirs.token})
    assert opened.status_code == 303
    for path in ("/dashboard/audit", "/dashboard/audit.csv"):
        refused = theirs.get(path)
        assert refused.status_code == 403 and "owner" in refused.get_data(as_text=True)
    assert 'href="/dashboard/audit"' not in theirs.get("/dashboard/members").get_data(as_text=True)


def test_the_log_pages_fifty_rows_at_a_time(app, sessions):
    owner = merchant_with_password(sessions)
    store_id = store_of(sessions, owner)
    with unit_of_work(sessions) as s:
        for i in range(51):
            audit.record(s, store_id, audit.OPERATOR, "api_key.revoked", "api_key", f"k{i}")
    dash = signed_in(app, owner)
    first = dash.get("/dashboard/audit").get_data(as_text=True)
    assert "51 entries" in first and "Page 1 of 2" in first
    second = dash.get("/dashboard/audit?page=2").get_data(as_text=True)
    shown = [re.findall(r"<code>(k\d+)</code>", page) for page in (first, second)]
    assert [len(ids) for ids in shown] == [50, 1]
    assert sorted(shown[0] + shown[1]) == sorted(f"k{i}" for i in range(51))  # no row twice, none left out


def test_rows_older_than_the_retention_setting_are_deleted(sessions, merchant):
    with unit_of_work(sessions) as s:
        for age, ref in ((400, "old"), (10, "recent")):
            audit.record(s, merchant.id, audit.OPERATOR, "api_key.revoked", "api_key", ref)
            s.flush()
            s.execute(
                sa.update(AuditEntry)
                .where(AuditEntry.store_id == merchant.id, AuditEntry.object_id == ref)
                .values(created_at=utcnow() - timedelta(days=age))
            )
    retention.purge(sessions, timedelta(hours=24), audit_keep=timedelta(days=365))
    assert "old" not in {e.object_id for e in entries(sessions, merchant.id)}
    assert "recent" in {e.object_id for e in entries(sessions, merchant.id)}
    retention.purge(sessions, timedelta(hours=24), audit_keep=timedelta(days=5))
    assert "recent" not in {e.object_id for e in entries(sessions, merchant.id)}


def test_an_accounts_password_change_is_recorded_in_every_store_it_may_open(app, sessions):
    shop, clerk = merchant_with_password(sessions), merchant_with_password(sessions)
    shop_id, clerk_store = store_of(sessions, shop), store_of(sessions, clerk)
    with unit_of_work(sessions) as s:
        stores.set_member(s, shop_id, stores.account_by_email(s, clerk), "viewer", actor=audit.OPERATOR)
        clerk_id = stores.account_by_email(s, clerk).id
    dash = signed_in(app, clerk)
    form = {"current_password": PASSWORD, "new_password": "n3w-pass-word", "confirm_password": "n3w-pass-word"}
    assert dash.post("/dashboard/settings/password", data={"csrf_token": dash.token, **form}).status_code == 200
    for store_id in (shop_id, clerk_store):
        (row,) = entries(sessions, store_id, "account.password_changed")
        assert (row.object_id, row.actor_id, row.actor_label) == (str(clerk_id), clerk_id, clerk)
    wrong = {**form, "current_password": "not-it-at-all"}
    assert dash.post("/dashboard/settings/password", data={"csrf_token": dash.token, **wrong}).status_code == 400
    assert len(entries(sessions, shop_id, "account.password_changed")) == 1  # a refused change: no row
