"""Merchant settings (payment lifetime, underpayment tolerance) set in the dashboard and with
``kassa merchant settings``, on real PostgreSQL; new payments then get them: their expiry
from the lifetime, and a slightly short confirmed total completes within the tolerance."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import iso
from tests.support.cli import kassa, kassa_main  # noqa: F401 - fixtures
from tests.support.dashboard import post
from tests.support.transfers import report, settle

LIFETIME_ERROR = "payment lifetime must be a whole number of minutes from 15 to 2880"
TOLERANCE_ERROR = "underpayment tolerance must be a percentage from 0 to 5"


def merchant_of(sessions, email: str) -> Merchant:
    with sessions() as s:
        return s.scalars(sa.select(Merchant).where(Merchant.email == email)).one()


def stored(sessions, email: str) -> tuple[int | None, Decimal]:
    m = merchant_of(sessions, email)
    return m.payment_lifetime_minutes, m.underpayment_tolerance


def new_payment(app, sessions, merchant_id: uuid.UUID, amount: float = 2) -> dict:
    """A test payment of ``amount`` USDC on BASE, made with the merchant's own API key."""
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, merchant_id, "test", ["payments:create"]).key
    r = app.test_client().post(
        "/v1/api/payments", json={"amount": amount, "token": "USDC", "network": "BASE"}, headers={"X-Api-Key": key}
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.json["data"]


def lifetime_of(payment: dict) -> timedelta:
    return datetime.fromisoformat(payment["expires_at"]) - datetime.fromisoformat(payment["created_at"])


# ---- dashboard ----------------------------------------------------------------------------------


def test_the_settings_page_needs_a_login(client):
    r = client.get("/dashboard/settings")
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/login")


def test_the_settings_page_is_in_the_nav_and_shows_the_defaults(dash, settings):
    page = dash.get("/dashboard/settings").get_data(as_text=True)
    assert 'href="/dashboard/settings">Settings</a>' in dash.get("/dashboard/payments").get_data(as_text=True)
    assert f"{settings.payment_lifetime_minutes} minutes</strong> (the default)" in page
    assert "<strong>0%</strong>" in page and 'name="csrf_token"' in page


def test_saving_settings_in_the_dashboard_stores_them(dash, sessions):
    r = post(dash, "/dashboard/settings", payment_lifetime="90", underpayment_tolerance="0.5")
    assert r.status_code == 200
    page = r.get_data(as_text=True)
    assert "Settings saved." in page and "90 minutes</strong>" in page and "<strong>0.5%</strong>" in page
    assert 'value="90"' in page and 'value="0.5"' in page
    assert stored(sessions, dash.email) == (90, Decimal("0.00500"))
    back = post(dash, "/dashboard/settings", payment_lifetime="", underpayment_tolerance="0")  # empty: the default
    assert back.status_code == 200 and "(the default)" in back.get_data(as_text=True)
    assert stored(sessions, dash.email) == (None, Decimal(0))


@pytest.mark.parametrize(
    "lifetime, tolerance, message",
    [
        ("14", "1", LIFETIME_ERROR),
        ("2881", "1", LIFETIME_ERROR),
        ("ninety", "1", LIFETIME_ERROR),
        ("60", "-0.001", TOLERANCE_ERROR),
        ("60", "5.001", TOLERANCE_ERROR),
        ("60", "", TOLERANCE_ERROR),
        ("60", "1e400", TOLERANCE_ERROR),
        ("60", "NaN", TOLERANCE_ERROR),
    ],
)
def test_out_of_range_settings_are_refused_with_400_and_the_reason_and_nothing_changes(
    dash, sessions, lifetime, tolerance, message
):
    assert post(dash, "/dashboard/settings", payment_lifetime="30", underpayment_tolerance="2").status_code == 200
    r = post(dash, "/dashboard/settings", payment_lifetime=lifetime, underpayment_tolerance=tolerance)
    assert r.status_code == 400
    page = r.get_data(as_text=True)
    assert 'class="form-error" role="alert"' in page  # the banner, and the reason beside the field:
    assert message[:1].upper() + message[1:] in page
    assert f'value="{lifetime}"' in page  # what was typed, to correct it
    assert stored(sessions, dash.email) == (30, Decimal("0.02000"))


def test_a_settings_form_without_its_csrf_token_is_refused(dash, sessions):
    r = dash.post("/dashboard/settings", data={"payment_lifetime": "90", "underpayment_tolerance": "1"})
    assert r.status_code == 403
    assert stored(sessions, dash.email) == (None, Decimal(0))


def test_new_payments_expire_after_the_merchants_lifetime(dash, sessions, app, settings):
    merchant_id = merchant_of(sessions, dash.email).id
    before = new_payment(app, sessions, merchant_id)
    assert lifetime_of(before) == timedelta(minutes=settings.payment_lifetime_minutes)
    assert post(dash, "/dashboard/settings", payment_lifetime="90", underpayment_tolerance="0").status_code == 200
    assert lifetime_of(new_payment(app, sessions, merchant_id)) == timedelta(minutes=90)
    with sessions() as s:  # a payment already made keeps its expiry
        kept = s.scalar(sa.select(Payment.expires_at).where(Payment.short_id == before["short_id"]))
    assert iso(kept) == before["expires_at"]


def test_a_slightly_short_payment_completes_within_the_merchants_tolerance(dash, sessions, app):
    merchant_id = merchant_of(sessions, dash.email).id
    assert post(dash, "/dashboard/settings", payment_lifetime="", underpayment_tolerance="1").status_code == 200
    within, beyond = new_payment(app, sessions, merchant_id), new_payment(app, sessions, merchant_id)
    assert within["crypto_amount"] == beyond["crypto_amount"] == "2"  # 2_000_000 units of USDC
    confirmed = TransferStatus.CONFIRMED
    settle(
        sessions,
        report(within, confirmed, 1_985_000, within["required_confirmations"]),  # 0.75 % short
        report(beyond, confirmed, 1_975_000, beyond["required_confirmations"]),
    )  # 1.25 % short
    with sessions() as s:
        status = dict(
            s.execute(
                sa.select(Payment.short_id, Payment.status).where(
                    Payment.short_id.in_([within["short_id"], beyond["short_id"]])
                )
            ).all()
        )
    assert status == {within["short_id"]: "COMPLETED", beyond["short_id"]: "PARTIALLY_PAID"}


# ---- CLI ----------------------------------------------------------------------------------------


def test_cli_prints_the_settings_and_sets_them_as_json(kassa, merchant, sessions, settings):
    shown = json.loads(kassa("--json", "merchant", "settings", merchant.email).stdout)
    assert shown == {
        "email": merchant.email,
        "payment_lifetime_minutes": settings.payment_lifetime_minutes,
        "payment_lifetime_default": True,
        "underpayment_tolerance_percent": "0",
        "rate_spread_pct": "0",
        "rate_lock_minutes": None,
    }
    changed = json.loads(
        kassa(
            "merchant",
            "settings",
            merchant.email,
            "--payment-lifetime",
            "120",
            "--underpayment-tolerance",
            "0.25",
            "--json",
        ).stdout
    )
    assert changed == {
        "email": merchant.email,
        "payment_lifetime_minutes": 120,
        "payment_lifetime_default": False,
        "underpayment_tolerance_percent": "0.25",
        "rate_spread_pct": "0",
        "rate_lock_minutes": None,
    }
    assert stored(sessions, merchant.email) == (120, Decimal("0.00250"))


def test_cli_changes_only_what_is_given_and_prints_text(kassa_main, merchant, sessions):
    code, out, _ = kassa_main(
        "merchant", "settings", merchant.email, "--payment-lifetime", "45", "--underpayment-tolerance", "2%"
    )
    assert code == 0
    assert out.strip() == (
        f"merchant {merchant.email}: payment lifetime 45 minutes, underpayment tolerance 2%, "
        f"rate spread 0%, rate lock the payment lifetime"
    )
    assert kassa_main("merchant", "settings", merchant.email, "--underpayment-tolerance", "0.5")[0] == 0
    assert stored(sessions, merchant.email) == (45, Decimal("0.00500"))
    code, out, _ = kassa_main("merchant", "settings", merchant.email, "--payment-lifetime", "default")
    assert code == 0 and "(the default, PAYMENT_LIFETIME_MINUTES)" in out and "tolerance 0.5%" in out
    assert stored(sessions, merchant.email) == (None, Decimal("0.00500"))


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--payment-lifetime", "14", LIFETIME_ERROR),
        ("--payment-lifetime", "2881", LIFETIME_ERROR),
        ("--payment-lifetime", "-5", LIFETIME_ERROR),
        ("--payment-lifetime", "1.5", LIFETIME_ERROR),
        ("--underpayment-tolerance", "5.5", TOLERANCE_ERROR),
        ("--underpayment-tolerance", "-1", TOLERANCE_ERROR),
        ("--underpayment-tolerance", "lots", TOLERANCE_ERROR),
    ],
)
def test_cli_refuses_bad_values_exiting_1_with_the_reason(kassa_main, merchant, sessions, option, value, message):
    code, out, err = kassa_main("merchant", "settings", merchant.email, "--payment-lifetime", "30", option, value)
    assert code == 1 and out == "" and err.startswith("kassa: ") and message in err
    code, _, err = kassa_main("--json", "merchant", "settings", merchant.email, option, value)
    assert code == 1 and message in json.loads(err)["error"]
    assert stored(sessions, merchant.email) == (None, Decimal(0))  # nothing written, not even the valid one


def test_cli_settings_of_an_unknown_merchant_exit_1(kassa_main):
    code, _, err = kassa_main("merchant", "settings", "nobody@example.com", "--payment-lifetime", "30")
    assert code == 1 and "no merchant with email nobody@example.com" in err


def test_cli_sets_the_rate_spread_and_lock(kassa_main, merchant, sessions):
    code, out, _ = kassa_main("merchant", "settings", merchant.email, "--rate-spread", "1.5", "--rate-lock", "20")
    assert code == 0 and out.strip().endswith("rate spread 1.5%, rate lock 20 minutes")
    with sessions() as s:
        m = merchants.merchant_by_email(s, merchant.email)
        assert (m.rate_spread_pct, m.rate_lock_minutes) == (Decimal("1.50"), 20)
    code, _, err = kassa_main("merchant", "settings", merchant.email, "--rate-spread", "11", "--rate-lock", "5")
    assert code == 1 and "rate spread must be a percentage from 0 to 10" in err
    code, out, _ = kassa_main("merchant", "settings", merchant.email, "--rate-lock", "default")
    assert code == 0 and "rate spread 1.5%, rate lock the payment lifetime" in out


def test_the_dashboard_sets_the_rate_spread_and_lock(dash, sessions):
    r = post(
        dash,
        "/dashboard/settings",
        payment_lifetime="",
        underpayment_tolerance="0",
        rate_spread_pct="2.5",
        rate_lock_minutes="10",
    )
    page = r.get_data(as_text=True)
    assert r.status_code == 200 and "<strong>2.5%</strong>" in page and "<strong>10 minutes</strong>" in page
    assert 'name="rate_spread_pct"' in page and 'value="2.5"' in page
    bad = post(
        dash,
        "/dashboard/settings",
        payment_lifetime="",
        underpayment_tolerance="0",
        rate_spread_pct="12",
        rate_lock_minutes="10",
    )
    assert bad.status_code == 400 and "Rate spread must be a percentage from 0 to 10" in bad.get_data(as_text=True)
    with sessions() as s:
        m = merchants.merchant_by_email(s, dash.email)
        assert (m.rate_spread_pct, m.rate_lock_minutes) == (Decimal("2.50"), 10)
