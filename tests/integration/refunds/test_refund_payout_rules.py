"""A refund's payout is its own (DESIGN §8, "Tied to its refund" and "Mode and merchant never
mix"), where no chain is needed: ``payout_amount`` (the amount plus a tag of 1–999 base
units, unique among the open refunds claimed to one address), test-mode refunds completed by
simulation only (``POST /refunds/:id/complete`` is a 409 there, never a 500), no cancel once a
payout is seen, and the claim form's address rules (no oracle on other merchants' deposit
addresses, no segwit v2–16)."""

from __future__ import annotations

import argparse
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.models import Refund
from kassa_dev.cli import cmd_dev_pay_refund
from tests.support.api import API
from tests.support.dashboard import csrf_of
from tests.support.refunds import GOOD, claim, path_of, settle_confirmed


def text(page) -> str:
    from html import unescape

    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.get_data(as_text=True))))


def get(client, m, refund, mode: str = "test") -> dict:
    r = client.get(f"{API}/refunds/{refund['id']}", headers=m.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_json()["data"]


def tag_of(refund: dict) -> int:
    """The tag, in base units (USDC: 6 decimals)."""
    return int((Decimal(refund["payout_amount"]) - Decimal(refund["amount"])) * 10**6)


def test_payout_amount_is_null_until_claimed_then_the_amount_plus_a_tag(
    client, make_merchant, paid_payment, create_refund
):
    m = make_merchant()
    refund = create_refund(m, paid_payment(m)["id"], {"amount": "2.5"})
    assert refund["payout_amount"] is None and refund["payout_from"] is None
    assert claim(client, refund, GOOD).status_code == 303
    shown = get(client, m, refund)
    assert 1 <= tag_of(shown) <= 999, shown["payout_amount"]
    assert shown["payout_from"] is None
    page = text(client.get(path_of(refund)))
    assert shown["payout_amount"] in page, page  # the customer sees what to expect


def test_open_refunds_claimed_to_one_address_get_distinct_tags_even_at_once(
    app, make_merchant, paid_payment, create_refund, sessions
):
    """Two merchants, both modes, claimed concurrently to one address: every tag differs and
    no claim is a 500 (the unique index on open tags is never hit)."""
    a, b = make_merchant(), make_merchant()
    refunds = []
    for m in (a, b):
        p = paid_payment(m, 20_000_000)
        refunds += [(m, create_refund(m, p["id"], {"amount": "1"})) for _ in range(6)]
    start = threading.Barrier(len(refunds))

    def post(item):
        _m, refund = item
        with app.test_client() as c:
            page = c.get(path_of(refund))
            token = csrf_of(page)
            start.wait()
            return c.post(path_of(refund), data={"csrf_token": token, "address": GOOD}).status_code

    with ThreadPoolExecutor(len(refunds)) as pool:
        statuses = list(pool.map(post, refunds))
    assert statuses == [303] * len(refunds), statuses
    with sessions() as s:
        tags = s.scalars(sa.select(Refund.payout_tag).where(Refund.id.in_([r["id"] for _m, r in refunds]))).all()
    assert len(set(tags)) == len(refunds) and all(1 <= t <= 999 for t in tags), tags


def test_a_test_refund_is_completed_by_simulation_only_and_a_hash_is_a_409_never_a_500(
    client, make_merchant, paid_payment, create_refund, settings
):
    m = make_merchant()
    p = paid_payment(m)
    one, two = create_refund(m, p["id"], {"amount": "1"}), create_refund(m, p["id"], {"amount": "1"})
    claim(client, one, GOOD)
    claim(client, two, GOOD)
    tx = "0x" + "5e" * 32
    for refund in (one, two, one):  # before: the first completed, the second a 500 (unique index)
        r = client.post(f"{API}/refunds/{refund['id']}/complete", json={"transaction_hash": tx}, headers=m.headers())
        assert r.status_code == 409, r.get_data(as_text=True)
        assert "simulat" in r.get_json()["error"]["message"], r.get_json()
    assert get(client, m, one)["status"] == "AWAITING_PAYMENT"

    # `kassa dev pay-refund` on a test refund simulates its payout: no chain, completed at once
    cmd_dev_pay_refund(argparse.Namespace(refund_id=one["id"], amount=None), settings)
    done = get(client, m, one)
    assert done["status"] == "COMPLETED" and done["transaction_hash"].startswith("test_tx_"), done
    assert not done["transaction_hash"].startswith("0x")  # never a chain transfer's ref

    # the claim page's test button does the same
    page = client.get(path_of(two))
    assert "Simulate the payout" in text(page)
    r = client.post(path_of(two) + "/simulate", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 303, r.get_data(as_text=True)
    done = get(client, m, two)
    assert done["status"] == "COMPLETED" and done["transaction_hash"].startswith("test_tx_")
    assert "Refunded" in text(client.get(path_of(two)))


def test_a_live_refund_has_no_simulation(make_merchant, sessions, settings, engine):
    from kassa_common.chains.networks import load_registry
    from kassa_api.app import create_app
    from tests.support.api import set_live_wallet

    live = settings.with_(networks=load_registry({"BASE_RPC_URL": "http://127.0.0.1:9"}))  # a node that never answers
    client = create_app(live, engine=engine).test_client()
    m = make_merchant()
    set_live_wallet(sessions, m.id, "evm")
    r = client.post(
        f"{API}/payments", json={"amount": 5, "token": "USDC", "network": "BASE"}, headers=m.headers("live")
    )
    assert r.status_code == 201, r.get_data(as_text=True)
    p = r.get_json()["data"]
    settle_confirmed(sessions, p, 5_000_000)
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "1"}, headers=m.headers("live"))
    refund = r.get_json()["data"]
    assert claim(client, refund, GOOD).status_code == 303  # no node answers: the claim still goes through
    page = client.get(path_of(refund))
    assert "Simulate the payout" not in text(page)
    with client.session_transaction() as sess:  # the page has no form: post with the session's token
        sess["_csrf"] = "t"
    r = client.post(path_of(refund) + "/simulate", data={"csrf_token": "t"})
    assert r.status_code == 404
    r = client.post(
        f"{API}/refunds/{refund['id']}/complete", json={"transaction_hash": "0x" + "5e" * 32}, headers=m.headers("test")
    )
    assert r.status_code == 404  # a test key never reaches a live refund
    assert get(client, m, refund, "live")["status"] == "AWAITING_PAYMENT"


def test_a_refund_whose_payout_is_seen_cannot_be_canceled(client, make_merchant, paid_payment, create_refund, sessions):
    m = make_merchant()
    refund = create_refund(m, paid_payment(m)["id"], {"amount": "1"})
    claim(client, refund, GOOD)
    with unit_of_work(sessions) as s:  # what the watcher records when it sees the payout
        s.execute(
            sa.update(Refund)
            .where(Refund.id == uuid.UUID(refund["id"]))
            .values(transfer_ref="0x" + "ab" * 32 + ":0:" + GOOD.lower(), payout_units=1_000_001, confirmations=1)
        )
    r = client.post(f"{API}/refunds/{refund['id']}/cancel", headers=m.headers())
    assert r.status_code == 409, r.get_data(as_text=True)
    assert "payout" in r.get_json()["error"]["message"]
    assert get(client, m, refund)["status"] == "AWAITING_PAYMENT"


def test_the_claim_form_is_no_oracle_on_other_merchants_deposit_addresses(
    client, make_merchant, paid_payment, create_refund, create_payment
):
    m, other = make_merchant(), make_merchant()
    own = paid_payment(m)
    theirs = create_payment(other, {"amount": 3, "token": "USDC", "network": "BASE"})
    refund = create_refund(m, own["id"], {"amount": "1"})
    r = claim(client, refund, own["address"])  # the merchant's own deposit: refused, it would pay itself
    assert r.status_code == 400 and "payment address" in text(r).lower()
    r = claim(client, refund, theirs["address"])  # another merchant's: answered like any address
    assert r.status_code == 303, text(r)


def test_segwit_v2_to_v16_addresses_are_refused(client, make_merchant, create_payment, sessions, create_refund):
    m = make_merchant()
    p = create_payment(m, {"amount": 60, "token": "BTC", "network": "BITCOIN"})
    settle_confirmed(sessions, p, 100_000)
    refund = create_refund(m, p["id"], {"amount": "0.0005"})
    for address in ("bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "BC1SW50QGDZ25J"):  # BIP-350's v2 and v16
        r = claim(client, refund, address)
        assert r.status_code == 400, (address, text(r))
        assert "witness version" in text(r).lower(), text(r)
