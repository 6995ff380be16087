"""Guarded live wallet changes (DESIGN.md section 10), as a merchant meets them: a change asked
for in the dashboard in live mode is held for WALLET_CHANGE_HOLD_HOURS (payments keep
going to the current wallet), emailed with a link (a real SMTP server) to a page whose button cancels it
without a login (opening the link cancels nothing), and applied by the expirer once its time has come."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from kassa_common.accounts import merchants, stores
from kassa_common.chains.hd import derive_address
from kassa_common.db import unit_of_work
from kassa_common.models import Wallet, WalletChange
from kassa_common.timefmt import utcnow
from kassa_expirer.jobs import Jobs
from tests.support.api import API, LIVE_PAYMENT, set_live_wallet
from tests.support.dashboard import csrf_of
from tests.support.keys import fresh_key
from tests.support.mail_notifier import DASHBOARD, notifier  # noqa: F401  (fixture)
from tests.support.wait import until


@pytest.fixture
def production(settings, engine):
    """Production pages and API (no development shortcut: the hold applies), 24 h hold."""
    from kassa_api.app import create_app

    configured = settings.with_(
        kassa_env="production",
        web={"secret_key": secrets.token_urlsafe(32), "wallet_change_hold_hours": 24.0},
        rates={"fixed_rates_allow_live": False, "providers": ()},
        dashboard_url=DASHBOARD,
    )
    return lambda: create_app(configured, engine=engine).test_client()


@pytest.fixture
def shop(make_merchant, sessions):
    """A live merchant with a password and a mainnet EVM key in force."""
    m = make_merchant()
    with unit_of_work(sessions) as s:
        stores.account_by_email(s, m.email).password_hash = merchants.hash_password("s3cret-pass")
    m.old_key = set_live_wallet(sessions, m.id, "evm", fresh_key())
    return m


def live_session(client, email: str) -> str:
    token = csrf_of(client.get("/dashboard/login"))
    r = client.post("/dashboard/login", data={"csrf_token": token, "email": email, "password": "s3cret-pass"})
    assert r.status_code == 303
    token = csrf_of(client.get("/dashboard/keys"))
    r = client.post("/dashboard/mode", data={"csrf_token": token, "mode": "live", "next": "/dashboard/wallets"})
    assert r.status_code == 303
    return csrf_of(client.get("/dashboard/wallets"))


def ask_change(client, token: str, key: str):
    r = client.post(
        "/dashboard/wallets", data={"csrf_token": token, "chain": "evm", "xpub": key, "password": "s3cret-pass"}
    )
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_data(as_text=True)


def wallet_key(sessions, merchant_id) -> str | None:
    with sessions() as s:
        return s.scalar(sa.select(Wallet.xpub).where(Wallet.merchant_id == merchant_id, Wallet.mode == "live"))


def live_address(client, merchant) -> str:
    r = client.post(f"{API}/payments", json=LIVE_PAYMENT, headers=merchant.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]["address"]


def test_a_live_change_is_held_emailed_and_canceled_from_the_emails_link(production, shop, sessions, notifier):
    client = production()
    token = live_session(client, shop.email)
    new_key = fresh_key()
    page = ask_change(client, token, new_key)
    assert 'id="pending-evm"' in page and new_key in page and "Cancel this change" in page

    # held: the wallet in force is unchanged and payments keep going to it
    assert wallet_key(sessions, shop.id) == shop.old_key
    assert live_address(client, shop) == derive_address("evm", shop.old_key, 0)

    # emailed, with a link that cancels it
    mail = until(lambda: notifier.to(shop.email), timeout=20, message="the wallet change email")[0]
    body = mail.get_body(("plain",)).get_content()
    assert new_key in body and "wallet" in mail["Subject"]
    link = re.search(rf"{re.escape(DASHBOARD)}/wallets/cancel/\S+", body).group(0)

    stranger = production()  # the link needs no login
    path = urlsplit(link).path
    for _ in range(2):  # opening it (a mail scanner fetching it) cancels nothing: it asks
        r = stranger.get(path)
        page = r.get_data(as_text=True)
        assert r.status_code == 200 and "is canceled" not in page and "Cancel this change" in page
    assert 'id="pending-evm"' in client.get("/dashboard/wallets").get_data(as_text=True)
    form = re.search(r'<form[^>]*method="post"[^>]*action="([^"]+)"', page)
    assert form and form.group(1) == path
    assert stranger.post(path, data={}).status_code == 403  # a forged cross-site post: no token
    assert stranger.post(path, data={"csrf_token": "forged"}).status_code == 403
    assert 'id="pending-evm"' in client.get("/dashboard/wallets").get_data(as_text=True)
    r = stranger.post(path, data={"csrf_token": csrf_of(page)})  # the page's button
    assert r.status_code == 200 and "is canceled" in r.get_data(as_text=True)
    assert stranger.get(path).status_code == 404  # once only
    assert stranger.post(path, data={"csrf_token": csrf_of(page)}).status_code == 404

    # even past its time, a canceled change never applies
    with unit_of_work(sessions) as s:
        s.execute(sa.update(WalletChange).where(WalletChange.merchant_id == shop.id).values(applies_at=utcnow()))
    Jobs(sessions, timedelta(hours=1)).apply_wallet_changes()
    assert wallet_key(sessions, shop.id) == shop.old_key
    assert 'id="pending-evm"' not in client.get("/dashboard/wallets").get_data(as_text=True)


def test_a_held_change_applies_when_its_time_comes(production, shop, sessions):
    client = production()
    new_key = fresh_key()
    ask_change(client, live_session(client, shop.email), new_key)
    jobs = Jobs(sessions, timedelta(hours=1))
    jobs.tick()
    assert wallet_key(sessions, shop.id) == shop.old_key  # 24 h to go

    with unit_of_work(sessions) as s:  # the clock moves on: the change is due
        s.execute(
            sa.update(WalletChange)
            .where(WalletChange.merchant_id == shop.id)
            .values(applies_at=utcnow() - timedelta(seconds=1))
        )
    assert jobs.apply_wallet_changes() == 1
    assert wallet_key(sessions, shop.id) == new_key
    assert live_address(client, shop) == derive_address("evm", new_key, 0)
    assert 'id="pending-evm"' not in client.get("/dashboard/wallets").get_data(as_text=True)


def test_the_dashboards_cancel_button_and_a_zero_hold(production, settings, engine, shop, sessions):
    client = production()
    token = live_session(client, shop.email)
    ask_change(client, token, fresh_key())
    with sessions() as s:
        change_id = s.scalar(sa.select(WalletChange.id).where(WalletChange.merchant_id == shop.id))
    r = client.post(f"/dashboard/wallets/pending/{change_id}/cancel", data={"csrf_token": token})
    assert r.status_code == 303
    with sessions() as s:
        assert s.get(WalletChange, change_id).canceled_at is not None

    from kassa_api.app import create_app

    at_once = create_app(
        settings.with_(
            kassa_env="production", web={"secret_key": secrets.token_urlsafe(32), "wallet_change_hold_hours": 0.0}
        ),
        engine=engine,
    ).test_client()
    new_key = fresh_key()
    ask_change(at_once, live_session(at_once, shop.email), new_key)
    assert wallet_key(sessions, shop.id) == new_key
