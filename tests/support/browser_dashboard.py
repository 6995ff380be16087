"""Merchants of the running stack for the dashboard's browser tests: one made with a password,
logged in through the login page, its emailed password reset link, and its payments."""

from __future__ import annotations

import re
import secrets
import uuid
from datetime import timedelta
from urllib.parse import urlsplit

import requests
import sqlalchemy as sa

from kassa_common import payments
from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Notification, Payment
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from tests.support.transfers import report
from tests.support.wait import until

PASSWORD = "correct horse battery"


def dashboard_merchant(sessions) -> str:
    email = f"dash-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:
        merchants.create_merchant(s, email, PASSWORD, "Corner Shop", activate=True)
    return email


def log_in(page, stack, email: str, lands_on: str = "/dashboard/overview") -> None:
    """Sign in with the password; ``lands_on``: the page that follows (the code step for an
    account with two-factor sign-in)."""
    page.goto(f"{stack.base}/dashboard/login")
    page.locator("#email").fill(email)
    page.locator("#password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(re.escape(lands_on) + "$"))


def emailed_link(sessions, email: str) -> str:
    def body():
        with sessions() as s:
            return s.scalar(
                sa.select(Notification.body_text).where(
                    Notification.recipient == email, Notification.kind == "password_reset"
                )
            )

    text = until(body, timeout=15, message="the password reset email")
    return urlsplit(re.search(r"https?://\S+/dashboard/reset/\S+", text).group(0)).path


AMOUNTS = ["1250.00", "80.00", "432.10", "15.99", "999.00", "260.00", "49.50"]


def completed_across_the_month(stack, sessions, email: str) -> None:
    """Test payments that the stack completes by itself, then moved to days spread over the 30."""
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, merchants.merchant_by_email(s, email).id, "test", ["payments:create"]).key
    ids = []
    for amount in AMOUNTS:
        r = requests.post(
            f"{stack.api}/payments",
            json={"amount": float(amount), "token": "USDC", "network": "BASE"},
            headers={"X-Api-Key": key},
            timeout=5,
        )
        assert r.status_code == 201, r.text
        ids.append(uuid.UUID(r.json()["data"]["id"]))

    def all_completed() -> bool:
        with sessions() as s:
            return s.scalar(
                sa.select(sa.func.count()).where(Payment.id.in_(ids), Payment.status == "COMPLETED")
            ) == len(ids)

    until(all_completed, 60, message="the stack to complete the test payments")
    with unit_of_work(sessions) as s:
        for back, pid in zip((0, 2, 5, 9, 16, 23, 29), ids, strict=False):
            s.execute(sa.update(Payment).where(Payment.id == pid).values(completed_at=utcnow() - timedelta(days=back)))


def over_paid_payment(stack, sessions, key: str) -> dict:
    """A test payment of 12.34 USDC on BASE that received 15 (confirmed)."""
    body = {"amount": 12.34, "token": "USDC", "network": "BASE"}
    r = requests.post(f"{stack.api}/payments", json=body, headers={"X-Api-Key": key}, timeout=5)
    assert r.status_code == 201, r.text
    p = r.json()["data"]
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(p["id"])).values(test_auto_complete=False))
    with unit_of_work(sessions) as s:
        payments.settle(s, report(p, TransferStatus.CONFIRMED, 15_000_000, 12))
    return p
