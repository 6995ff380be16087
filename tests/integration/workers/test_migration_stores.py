"""0027, accounts and stores (DESIGN §14), on a database at 0026 holding a merchant with a
password, API keys, a payment and a refund: after the upgrade the old key, the old sign-in
and every id work as before, and the merchant is the owner of one store of its own id."""

from __future__ import annotations

import secrets
import uuid

import pytest
import sqlalchemy as sa
from alembic import command

from kassa_common.accounts import keys, logins, merchants
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory, sqlalchemy_url, unit_of_work
from kassa_common.migrate import alembic_config, upgrade
from kassa_common.models import AuditEntry
from tests.conftest import fresh_database
from tests.support.api import API, PAYMENT
from tests.support.dashboard import csrf_of
from tests.support.refunds import settle_confirmed

PASSWORD = "old-merchant-pass"


@pytest.fixture
def database_at_0026():
    with fresh_database("mig_", "0026") as url:
        yield url


def _app(base_env, url):
    from kassa_api.app import create_app

    settings = Settings.from_env({**base_env, "DATABASE_URL": url})
    engine = make_engine(settings.database_url, pool_size=2)
    return create_app(settings, engine=engine), engine


def _log_in(client, email: str, password: str):
    token = csrf_of(client.get("/dashboard/login"))
    return client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": password})


def test_0027_keeps_every_key_id_and_sign_in_of_a_merchant_and_makes_it_its_stores_owner(base_env, database_at_0026):
    url, merchant_id = database_at_0026, uuid.uuid4()
    email = f"Old-{secrets.token_hex(4)}@Example.com"  # as typed at sign-up: the case is kept
    app, engine = _app(base_env, url)
    sessions = make_session_factory(engine)
    # today's code writes audit rows (0029): a scratch table for the set-up, dropped before the upgrade
    AuditEntry.__table__.create(engine)
    with engine.begin() as conn:  # the merchant as 0026 stored it: its login on its own row
        conn.execute(
            sa.text(
                "INSERT INTO merchants (id, email, password_hash, business_name, activated) "
                "VALUES (:id, :email, :hash, 'Old Shop', true)"
            ),
            {"id": merchant_id, "email": email, "hash": merchants.hash_password(PASSWORD)},
        )
    with unit_of_work(sessions) as s:
        test_key = keys.create_key(s, merchant_id, "test", list(keys.SCOPES)).key
        live_key = keys.create_key(s, merchant_id, "live", ["payments:read"]).key
    client = app.test_client()
    made = client.post(f"{API}/payments", json=PAYMENT, headers={"X-Api-Key": test_key})
    assert made.status_code == 201, made.get_data(as_text=True)
    payment = made.get_json()["data"]
    settle_confirmed(sessions, payment, 15_000_000)
    refunded = client.post(f"{API}/payments/{payment['id']}/refunds", json={}, headers={"X-Api-Key": test_key})
    assert refunded.status_code == 201, refunded.get_data(as_text=True)
    refund = refunded.get_json()["data"]
    token = logins.new_token()  # a dashboard login made at 0026 (its row named the merchant)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO dashboard_sessions (id_hash, merchant_id, expires_at) "
                "VALUES (:h, :m, now() + interval '1 day')"
            ),
            {"h": logins.id_hash(token), "m": merchant_id},
        )
    AuditEntry.__table__.drop(engine)
    engine.dispose()

    upgrade(url)

    app, engine = _app(base_env, url)
    try:
        client = app.test_client()
        got = client.get(f"{API}/payments/{payment['short_id']}", headers={"X-Api-Key": test_key})
        assert got.status_code == 200 and got.get_json()["data"]["id"] == payment["id"]
        listed = client.get(f"{API}/payments", headers={"X-Api-Key": live_key})
        assert listed.status_code == 200  # the live key too (another mode, fewer scopes)
        again = client.get(f"{API}/refunds/{refund['id']}", headers={"X-Api-Key": test_key})
        assert again.status_code == 200 and again.get_json()["data"]["id"] == refund["id"]
        assert client.get(f"/pay/{payment['short_id']}").status_code == 200  # the checkout URL

        browser = app.test_client()
        assert _log_in(browser, email.lower(), PASSWORD).status_code == 303  # the old email and password
        page = browser.get("/dashboard/payments")
        assert page.status_code == 200 and payment["short_id"] in page.get_data(as_text=True)
        assert _log_in(app.test_client(), email, "not-the-password").status_code == 401
        # a browser signed in before the upgrade keeps its login (the account has the merchant's id)
        signed_in_before = app.test_client()
        with signed_in_before.session_transaction() as cookie:
            cookie["sid"] = token
        assert signed_in_before.get("/dashboard/payments").status_code == 200

        with engine.connect() as conn:
            account = conn.execute(sa.text("SELECT id, email FROM accounts")).one()
            members = conn.execute(sa.text("SELECT store_id, account_id, role FROM store_members")).all()
            store = conn.execute(sa.text("SELECT id, email, business_name FROM merchants")).one()
            columns = set(
                conn.scalars(sa.text("SELECT column_name FROM information_schema.columns WHERE table_name='merchants'"))
            )
        assert (account.id, account.email) == (merchant_id, email)
        assert members == [(merchant_id, merchant_id, "owner")]
        assert (store.id, store.email, store.business_name) == (merchant_id, email, "Old Shop")
        assert not columns & {"password_hash", "totp_secret", "recovery_code_hashes"}  # the login moved
    finally:
        engine.dispose()

    command.downgrade(alembic_config(url), "0026")  # and back: the store takes its owner's login again
    engine = sa.create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            stored = conn.scalar(sa.text("SELECT password_hash FROM merchants WHERE id = :id"), {"id": merchant_id})
            login = conn.scalar(sa.text("SELECT merchant_id FROM dashboard_sessions"))
        assert merchants.check_password(stored, PASSWORD) and login == merchant_id
    finally:
        engine.dispose()
