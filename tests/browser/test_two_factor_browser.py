"""Two-factor sign-in in real Chromium against the running stack: a merchant enrols from
the QR page (secret, confirming code, recovery codes), then signs in with a code, is
refused a wrong code, and signs in with a recovery code; a copied session cookie is
worthless after logout."""

from __future__ import annotations

import re
import time

import pyotp
from playwright.sync_api import expect

from tests.support.browser_dashboard import PASSWORD, dashboard_merchant, log_in


def password_step(page, stack, email: str) -> None:
    log_in(page, stack, email, lands_on="/dashboard/login/code")


def log_out(page) -> None:
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/dashboard/login$"))


def test_enrol_then_sign_in_with_a_code_a_wrong_code_and_a_recovery_code(stack, sessions, page, tmp_path):
    email = dashboard_merchant(sessions)
    log_in(page, stack, email)
    page.goto(f"{stack.base}/dashboard/settings/2fa")
    expect(page.locator("#totp-qr")).to_be_visible()
    assert page.locator("#totp-qr").evaluate("img => img.naturalWidth") > 0  # the SVG QR code renders
    secret = page.locator("#totp-secret").inner_text().strip()
    totp = pyotp.TOTP(secret)
    page.locator("#enrol-password").fill(PASSWORD)  # turning it on asks for the password again
    page.locator("#enrol-code").fill(totp.now())
    page.get_by_role("button", name="Turn on two-factor sign-in").click()
    expect(page.locator("#two-factor-status")).to_contain_text("on")
    codes = [c.strip() for c in page.locator("#recovery-codes code").all_inner_texts()]
    assert len(codes) == 10
    page.screenshot(path=str(tmp_path / "two-factor-enrolled.png"), full_page=True)
    log_out(page)

    password_step(page, stack, email)  # a wrong code: refused, still at the second step
    page.locator("#code").fill("000000" if totp.now() != "000000" else "111111")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".form-error")).to_contain_text("That code is not right")
    page.goto(f"{stack.base}/dashboard/payments")
    page.wait_for_url(re.compile(r"/dashboard/login$"))

    password_step(page, stack, email)  # the next step's code (the enrolment took the current one)
    page.locator("#code").fill(totp.at(time.time() + 30))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(re.compile(r"/dashboard/overview$"))
    copied = next(c for c in page.context.cookies() if c["name"] == "session")
    log_out(page)

    thief = page.context.browser.new_context()  # the cookie copied before logout opens nothing
    thief.add_cookies([copied])
    stolen = thief.new_page()
    stolen.goto(f"{stack.base}/dashboard/payments")
    stolen.wait_for_url(re.compile(r"/dashboard/login$"))
    thief.close()

    password_step(page, stack, email)  # the device is lost: a recovery code, once
    page.locator("summary").click()
    page.locator("#recovery-code").fill(codes[3])
    page.get_by_role("button", name="Sign in with a recovery code").click()
    page.wait_for_url(re.compile(r"/dashboard/overview$"))
    log_out(page)
    password_step(page, stack, email)
    page.locator("summary").click()
    page.locator("#recovery-code").fill(codes[3])
    page.get_by_role("button", name="Sign in with a recovery code").click()
    expect(page.locator(".form-error")).to_contain_text("That code is not right")
