"""Payments and products made through the running stack's API for the browser tests of the
checkout and product pages, and the QR code read off a checkout page."""

from __future__ import annotations

import io
import re
import uuid

import requests
import sqlalchemy as sa
import zxingcpp
from PIL import Image

from kassa_common.models import Payment

TIMEOUT_MS = 20_000


def create_payment(stack, merchant, **extra) -> dict:
    body = {"amount": 12.34, "token": "USDC", "network": "BASE", **extra}
    r = requests.post(f"{stack.api}/payments", json=body, headers=merchant.headers(), timeout=5)
    assert r.status_code == 201, r.text
    return r.json()["data"]


def held_payment(stack, merchant, sessions, **extra) -> dict:
    """A test payment that stays PENDING until the tester acts (no automatic completion)."""
    p = create_payment(stack, merchant, **extra)
    with sessions.begin() as s:
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(p["id"])).values(test_auto_complete=False))
    return p


def api_payment(stack, merchant, ref: str) -> dict:
    return requests.get(f"{stack.api}/payments/{ref}", headers=merchant.headers(), timeout=5).json()["data"]


def create_product(stack, merchant, **fields) -> dict:
    body = {"name": "Blue mug", "description": "Stoneware, 350 ml.", "price": 19.99, **fields}
    r = requests.post(f"{stack.api}/products", json=body, headers=merchant.headers(), timeout=5)
    assert r.status_code == 201, r.text
    return r.json()["data"]


def cancel_on_checkout(page) -> None:
    """The customer's cancel: "Cancel payment" opens the confirmation, whose button cancels."""
    page.locator("#cancel-payment summary").click()
    page.get_by_role("button", name=re.compile("^Yes, cancel the payment")).click()


def qr_text(page) -> str:
    """What a wallet app reads from the QR code on the page."""
    shot = Image.open(io.BytesIO(page.locator(".qr svg").screenshot()))
    (code,) = zxingcpp.read_barcodes(shot)
    return code.text
