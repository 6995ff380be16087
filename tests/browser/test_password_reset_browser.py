"""Password reset in real Chromium on a phone against the running stack: "Forgot your
password?" on the login page, the same answer for any email, the emailed link (read from
the email the notifier sends) to a form for the new password, every login signed out,
the new password logs in, and the used link no longer works."""

from __future__ import annotations

import re
import secrets

from playwright.sync_api import expect

from tests.support.browser_dashboard import dashboard_merchant, emailed_link, log_in

NEW_PASSWORD = "a brand new passphrase"


def test_reset_a_forgotten_password_on_a_phone(stack, sessions, phone, browser, artifacts):
    email = dashboard_merchant(sessions)
    other = browser.new_context()  # a login elsewhere, signed out by the reset
    laptop = other.new_page()
    log_in(laptop, stack, email)

    page = phone
    page.goto(f"{stack.base}/dashboard/login")
    page.get_by_role("link", name="Forgot your password?").click()
    page.wait_for_url(re.compile(r"/dashboard/forgot$"))
    page.locator("#email").fill(email)
    page.get_by_role("button", name="Email me a link").click()
    expect(page.locator("#reset-sent")).to_contain_text("If an account exists")
    page.screenshot(path=str(artifacts / "password-reset-sent-390.png"), full_page=True)

    path = emailed_link(sessions, email)
    page.goto(f"{stack.base}{path}")
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    page.locator("#password").fill(NEW_PASSWORD)
    page.locator("#confirm_password").fill(NEW_PASSWORD + "!")
    page.get_by_role("button", name="Set the new password").click()
    expect(page.locator("#confirm_password-error")).to_contain_text("The two passwords do not match.")
    expect(page.locator("#confirm_password")).to_have_attribute("aria-invalid", "true")
    page.locator("#password").fill(NEW_PASSWORD)
    page.locator("#confirm_password").fill(NEW_PASSWORD)
    page.screenshot(path=str(artifacts / "password-reset-form-390.png"), full_page=True)
    page.get_by_role("button", name="Set the new password").click()
    expect(page.locator(".notice")).to_contain_text("every login was signed out")

    laptop.goto(f"{stack.base}/dashboard/payments")  # the other login is gone
    laptop.wait_for_url(re.compile(r"/dashboard/login$"))
    other.close()

    page.locator("#email").fill(email)
    page.locator("#password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/dashboard/overview$"))

    page.goto(f"{stack.base}{path}")  # used once: it works no more
    expect(page.get_by_role("heading", name="This link no longer works")).to_be_visible()
    expect(page.locator("#reset-invalid")).to_contain_text("already used")
    page.screenshot(path=str(artifacts / "password-reset-used-390.png"), full_page=True)


def test_a_sign_up_on_a_phone_says_what_happens_next(stack, phone, artifacts):
    page = phone
    page.goto(f"{stack.base}/dashboard/signup")
    page.locator("#email").fill(f"phone-shop-{secrets.token_hex(4)}@example.com")
    page.locator("#password").fill(NEW_PASSWORD)
    page.locator("#business_name").fill("Phone Shop")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", name="Account created: waiting for activation")).to_be_visible()
    expect(page.locator("#signup-next")).to_contain_text("you cannot log in yet")
    page.screenshot(path=str(artifacts / "signup-done-390.png"), full_page=True)
