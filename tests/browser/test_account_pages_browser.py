"""The account pages as a person sees them, in real Chromium on a 390×844 phone and a
1280×800 laptop: log in (and its refusals), sign up and the wait for activation, the
forgotten password's request and its emailed form, and the settings page with what it
refuses. Each page shows its heading, its labelled fields and its errors, fits the screen,
and axe-core finds no serious accessibility problem on it. The screenshots are saved
in tests/artifacts/screens to be looked at."""

from __future__ import annotations

import re
import secrets

import pytest
from playwright.sync_api import expect

from tests.support.browser_dashboard import dashboard_merchant, emailed_link, log_in
from tests.support.screens import SIZES, fields, looking

NEW_PASSWORD = "another long passphrase"


@pytest.mark.parametrize("size", SIZES)
def test_log_in_sign_up_and_the_wait_for_activation(size, stack, sessions, browser, screenshots):
    with looking(browser, size, screenshots) as (page, look):
        page.goto(f"{stack.base}/dashboard/login")
        expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
        expect(page.get_by_role("banner")).to_have_text("Kassa dashboard")
        fields(page, "Email", "Password")
        expect(page.get_by_role("link", name="Forgot your password?")).to_be_visible()
        expect(page.get_by_role("link", name="Create an account")).to_be_visible()
        look("login")

        email = dashboard_merchant(sessions)
        page.get_by_label("Email", exact=True).fill(email)
        page.get_by_label("Password", exact=True).fill("not the password")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_text("Wrong email or password.")).to_be_visible()
        expect(page.get_by_label("Email", exact=True)).to_have_value(email)  # typed once
        look("login-wrong-password")

        page.get_by_role("link", name="Create an account").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Create your account")
        fields(page, "Email", "Password (8+ characters)", "Business name")
        look("signup")

        page.get_by_label("Email", exact=True).fill(email)  # taken
        page.get_by_label("Password (8+ characters)").fill(NEW_PASSWORD)
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_text(f"a merchant with email {email} already exists", exact=False)).to_be_visible()
        look("signup-taken")

        newcomer = f"new-shop-{secrets.token_hex(4)}@example.com"
        page.get_by_label("Email", exact=True).fill(newcomer)
        page.get_by_label("Password (8+ characters)").fill(NEW_PASSWORD)
        page.get_by_label("Business name").fill("New Shop")
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Account created: waiting for activation")
        expect(page.locator("#signup-next")).to_contain_text(newcomer)
        expect(page.locator("#signup-next")).to_contain_text("you cannot log in yet")
        look("signup-waiting-for-activation")

        page.get_by_role("link", name="Go to log in").click()
        page.get_by_label("Email", exact=True).fill(newcomer)
        page.get_by_label("Password", exact=True).fill(NEW_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_text("This account is not activated yet")).to_be_visible()
        look("login-not-activated")


@pytest.mark.parametrize("size", SIZES)
def test_a_forgotten_password_from_the_request_to_the_new_one(size, stack, sessions, browser, screenshots):
    email = dashboard_merchant(sessions)
    with looking(browser, size, screenshots) as (page, look):
        page.goto(f"{stack.base}/dashboard/forgot")
        expect(page.get_by_role("heading", level=1)).to_have_text("Reset your password")
        fields(page, "Email")
        look("forgot")

        page.get_by_label("Email", exact=True).fill(email)
        page.get_by_role("button", name="Email me a link").click()
        expect(page.locator("#reset-sent")).to_contain_text(f"If an account exists for {email}")
        expect(page.get_by_role("link", name="Back to log in")).to_be_visible()
        look("forgot-sent")

        path = emailed_link(sessions, email)
        page.goto(f"{stack.base}{path}")
        expect(page.get_by_role("heading", level=1)).to_have_text("Choose a new password")
        fields(page, "New password (8+ characters)", "New password again")
        look("reset")

        page.get_by_label("New password (8+ characters)").fill(NEW_PASSWORD)
        page.get_by_label("New password again").fill(NEW_PASSWORD + "?")
        page.get_by_role("button", name="Set the new password").click()
        expect(page.get_by_text("The two passwords do not match.")).to_be_visible()
        look("reset-mismatch")

        page.goto(f"{stack.base}/dashboard/reset/not-a-link-we-sent")
        expect(page.get_by_role("heading", level=1)).to_have_text("This link no longer works")
        expect(page.get_by_role("link", name="Email me a new link")).to_be_visible()
        look("reset-invalid-link")


@pytest.mark.parametrize("size", SIZES)
def test_the_settings_page_and_what_it_refuses(size, stack, sessions, browser, screenshots):
    email = dashboard_merchant(sessions)
    with looking(browser, size, screenshots) as (page, look):
        log_in(page, stack, email)
        page.get_by_role("link", name="Settings").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Settings")
        fields(
            page,
            "Payment lifetime (minutes)",
            "Underpayment tolerance (%)",
            "Rate spread (%)",
            "Rate lock (minutes)",
            "Current password",
            "New password",
            "New password again",
        )
        expect(page.get_by_role("heading", name="Active logins")).to_be_visible()
        expect(page.locator("#login-list tbody tr")).to_have_text([re.compile(r"Chrome on Linux \(this browser\)")])
        look("settings")

        page.get_by_label("Payment lifetime (minutes)").fill("5")
        page.get_by_label("Underpayment tolerance (%)").fill("0.5")
        page.get_by_role("button", name="Save settings").click()
        expect(
            page.get_by_text(re.compile("payment lifetime must be a whole number of minutes", re.IGNORECASE))
        ).to_be_visible()
        expect(page.get_by_label("Payment lifetime (minutes)")).to_have_value("5")
        look("settings-refused")

        page.get_by_label("Current password").fill("not it at all")
        page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
        page.get_by_label("New password again").fill(NEW_PASSWORD)
        page.get_by_role("button", name="Change password").click()
        expect(page.get_by_text("the current password is wrong", exact=False)).to_be_visible()
        look("settings-wrong-password")
