"""The claim page (DESIGN §8): what the customer sees, the address checked for the network
(400 with the reason), CSRF, then "waiting for the merchant", and the refunded state."""

from __future__ import annotations

import re
from html import unescape

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Refund
from tests.support.api import API
from tests.support.refunds import GOOD, claim, path_of, settle_confirmed


def text(page) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.get_data(as_text=True))))


def test_the_page_shows_the_refund_and_its_form(client, make_merchant, paid_payment, create_refund):
    m = make_merchant(business_name="Corner Shop")
    refund = create_refund(m, paid_payment(m)["id"], {"amount": "2.66"})
    page = client.get(path_of(refund))
    assert page.status_code == 200 and page.mimetype == "text/html"
    shown = text(page)
    for words in ("Refund from Corner Shop", "2.66 USDC", "on network Base", "Claim the refund", "TEST MODE"):
        assert words in shown, words
    assert 'name="address"' in page.get_data(as_text=True)
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert client.get("/refunds/no-such-token").status_code == 404
    assert client.get("/refunds/" + "x" * 500).status_code == 404


def test_a_valid_address_claims_it_then_the_page_waits_for_the_merchant(
    client, make_merchant, paid_payment, create_refund
):
    m = make_merchant()
    refund = create_refund(m, paid_payment(m)["id"], {"amount": "1"})
    r = claim(client, refund, GOOD.lower())
    assert r.status_code == 303 and r.headers["Location"].endswith(path_of(refund))
    page = client.get(path_of(refund))
    assert "Waiting for the merchant" in text(page) and GOOD in text(page)
    shown = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers()).get_json()["data"]
    assert shown["status"] == "AWAITING_PAYMENT" and shown["address"] == GOOD and shown["claimed_at"]
    # a second claim (a form kept open in another tab) changes nothing
    r = claim_after_cancel(client, refund, "0x" + "11" * 20)
    assert r.status_code == 409
    assert client.get(f"{API}/refunds/{refund['id']}", headers=m.headers()).get_json()["data"]["address"] == GOOD


def test_bad_evm_addresses_are_refused_with_the_reason(client, make_merchant, paid_payment, create_refund):
    m = make_merchant()
    p = paid_payment(m)
    refund = create_refund(m, p["id"], {"amount": "1"})
    cases = {
        GOOD[:-1] + "e": "checksum",  # mixed case, one letter's case wrong
        "0x" + "00" * 20: "zero address",
        "0x1234": "40 hexadecimal digits",
        "not an address": "40 hexadecimal digits",
        "": "required",
        p["address"]: "payment address",  # a Kassa deposit address
        p["address"].lower(): "payment address",
    }
    for address, reason in cases.items():
        r = claim(client, refund, address)
        assert r.status_code == 400, (address, r.status_code)
        assert reason.lower() in text(r).lower(), (address, text(r))
        assert 'role="alert"' in r.get_data(as_text=True)
    shown = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers()).get_json()["data"]
    assert shown["status"] == "AWAITING_ADDRESS" and shown["address"] is None


def test_bitcoin_refunds_take_the_networks_address_forms(
    client, make_merchant, create_payment, sessions, create_refund
):
    m = make_merchant()
    p = create_payment(m, {"amount": 60, "token": "BTC", "network": "BITCOIN"})
    settle_confirmed(sessions, p, 100_000)
    refund = create_refund(m, p["id"], {"amount": "0.0005"})
    for address, reason in {
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5": "checksum",  # last character changed
        "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080": "another Bitcoin network",
        "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn": "another Bitcoin network",  # testnet base58
        "0x52908400098527886E0F7030069857D2E4169EE7": "not a Bitcoin address",
        "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3": "not a Bitcoin address",  # base58 checksum wrong
    }.items():
        r = claim(client, refund, address)
        assert r.status_code == 400 and reason.lower() in text(r).lower(), (address, text(r))
    r = claim(client, refund, "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4")
    assert r.status_code == 303
    shown = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers()).get_json()["data"]
    assert shown["address"] == "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
    # the other forms pass too
    for address in (
        "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
        "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
    ):
        other = create_refund(m, p["id"], {"amount": "0.0001"})
        assert claim(client, other, address).status_code == 303, address


def test_the_form_needs_its_csrf_token(client, make_merchant, paid_payment, create_refund):
    m = make_merchant()
    refund = create_refund(m, paid_payment(m)["id"], {"amount": "1"})
    client.get(path_of(refund))
    for form in ({"address": GOOD}, {"address": GOOD, "csrf_token": "forged"}):
        r = client.post(path_of(refund), data=form)
        assert r.status_code == 403 and "expired or was not sent from this site" in text(r)
    shown = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers()).get_json()["data"]
    assert shown["status"] == "AWAITING_ADDRESS"


def test_canceled_expired_and_refunded_states(client, make_merchant, paid_payment, create_refund, sessions):
    m = make_merchant()
    p = paid_payment(m)
    canceled = create_refund(m, p["id"], {"amount": "1"})
    client.post(f"{API}/refunds/{canceled['id']}/cancel", headers=m.headers())
    page = client.get(path_of(canceled))
    assert "Canceled" in text(page) and 'name="address"' not in page.get_data(as_text=True)
    assert claim_after_cancel(client, canceled).status_code == 409

    overdue = create_refund(m, p["id"], {"amount": "1"})
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Refund).where(Refund.id == overdue["id"]).values(expires_at=sa.func.now()))
    assert "Expired" in text(client.get(path_of(overdue)))

    paid = create_refund(m, p["id"], {"amount": "1"})
    claim(client, paid, GOOD)
    tx = "0x" + "ab" * 32
    with unit_of_work(sessions) as s:  # what the payout detection records (refunds-chain's part)
        s.execute(
            sa.update(Refund)
            .where(Refund.id == paid["id"])
            .values(status="COMPLETED", transaction_hash=tx, completed_at=sa.func.now())
        )
    page = client.get(path_of(paid))
    assert "Refunded" in text(page) and tx in text(page)
    assert f'href="https://basescan.org/tx/{tx}"' in page.get_data(as_text=True)


def claim_after_cancel(client, refund, address=GOOD):
    """A claim posted from a page loaded before (the page shows no form any more)."""
    page = client.get(path_of(refund))
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    if token is None:  # the page has no form any more: post with the session's token
        with client.session_transaction() as sess:
            sess["_csrf"] = "t"
        return client.post(path_of(refund), data={"csrf_token": "t", "address": address})
    return client.post(path_of(refund), data={"csrf_token": token.group(1), "address": address})
