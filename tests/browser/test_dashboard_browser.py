"""A merchant in real Chromium: sign up, activation by the operator, log in, a test key, a payment."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import requests
from playwright.sync_api import expect

KASSA = str(Path(sys.executable).with_name("kassa"))


def test_merchant_signs_up_creates_a_key_and_finds_its_payment(stack, page):
    email = f"shop-{secrets.token_hex(4)}@example.com"
    page.goto(f"{stack.base}/dashboard/signup")
    page.locator("#email").fill(email)
    page.locator("#password").fill("correct horse battery")
    page.get_by_role("button", name="Sign up").click()
    expect(page.locator("#signup-next")).to_contain_text("you cannot log in yet")

    subprocess.run(
        [KASSA, "merchant", "activate", email],
        check=True,
        capture_output=True,
        env={**os.environ, "DATABASE_URL": stack.env["DATABASE_URL"]},
        timeout=60,
    )

    page.goto(f"{stack.base}/dashboard/login")
    page.locator("#email").fill(email)
    page.locator("#password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/dashboard/onboarding$"))
    page.locator("#business_name").fill("Corner Shop")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#mode")).to_have_text("TEST")

    page.get_by_role("link", name="API keys").click()
    page.locator("#key-name").fill("server")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").inner_text().strip()
    assert key.startswith("kassa_test_")

    r = requests.post(
        f"{stack.api}/payments",
        json={"amount": 7.5, "token": "USDC", "network": "BASE", "customer_email": "buyer@example.com"},
        headers={"X-Api-Key": key},
        timeout=5,
    )
    assert r.status_code == 201, r.text
    short_id = r.json()["data"]["short_id"]

    page.get_by_role("link", name="Payments").click()
    page.get_by_label("Search").fill("buyer@example.com")
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("link", name=short_id).click()
    expect(page.locator("h1")).to_have_text(f"Payment {short_id}")
    expect(page.locator("#timeline")).to_contain_text("payment.created")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/dashboard/login$"))
    page.goto(f"{stack.base}/dashboard/payments")
    page.wait_for_url(re.compile(r"/dashboard/login$"))
