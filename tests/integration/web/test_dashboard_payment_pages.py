"""The dashboard's payment pages as a merchant reads them, on real PostgreSQL: the detail
shows the customer, metadata, token amounts, rate, expiry and the transaction (an explorer
link only for a real one); the list shows each payment's date, customer and order id and
filters by a created-on date range that its CSV export follows; bad dates get the 400 page."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
import sqlalchemy as sa

from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment
from kassa_common.timefmt import utcnow

BODY = {"amount": 25, "token": "USDC", "network": "BASE"}
HASH = "0x" + "ab" * 32


@pytest.fixture
def shop(dash, sessions, app):
    """The dashboard's merchant with three test payments made through its API key: ``old``
    created ten days ago, ``named`` (a name, an email and an order id) and ``bare`` today."""
    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", list(keys.SCOPES)).key
    api = app.test_client()
    made = {}
    for name, extra in {
        "old": {"customer_name": "Olga Old", "metadata": {"order_id": "A-1"}},
        "named": {
            "customer_name": "Ada Lovelace",
            "customer_email": "ada@example.com",
            "metadata": {"order_id": "ORD-42", "sku": "mug", "qty": 2},
        },
        "bare": {},
    }.items():
        r = api.post("/v1/api/payments", json={**BODY, **extra}, headers={"X-Api-Key": key})
        assert r.status_code == 201, r.get_data(as_text=True)
        made[name] = r.json["data"]
    dash.old_day = (utcnow() - timedelta(days=10)).date()
    with unit_of_work(sessions) as s:
        s.execute(
            sa.update(Payment).where(Payment.id == made["old"]["id"]).values(created_at=utcnow() - timedelta(days=10))
        )
    dash.made = made
    return dash


def page(client, path: str) -> str:
    r = client.get(path)
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_data(as_text=True)


def text_of(html: str, element_id: str) -> str:
    found = re.search(rf'<(\w+) id="{element_id}"[^>]*>(.*?)</\1>', html, re.DOTALL)
    assert found, f"no #{element_id}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(2))).strip()


def test_the_detail_shows_customer_metadata_token_amounts_rate_and_expiry(shop):
    named = shop.made["named"]
    html = page(shop, f"/dashboard/payments/{named['short_id']}")
    assert text_of(html, "customer") == "Ada Lovelace ada@example.com"
    assert text_of(html, "metadata") == "order_id ORD-42 qty 2 sku mug"
    assert text_of(html, "crypto-due") == f"{named['crypto_amount']} USDC"
    assert text_of(html, "crypto-received") == f"{named['amount_received']} USDC"
    assert text_of(html, "rate").startswith(f"1 USDC = {named['exchange_rate'].rstrip('0').rstrip('.')}")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", text_of(html, "expires"))
    assert text_of(html, "transaction") == "—"


def test_a_payment_with_only_a_name_shows_it_and_one_without_says_so(shop):
    old = page(shop, f"/dashboard/payments/{shop.made['old']['short_id']}")
    assert text_of(old, "customer") == "Olga Old"
    bare = page(shop, f"/dashboard/payments/{shop.made['bare']['short_id']}")
    assert text_of(bare, "customer") == "—" and text_of(bare, "metadata") == "No metadata."


def test_the_transaction_links_to_the_explorer_in_live_mode_only(shop, sessions):
    ref = shop.made["named"]["short_id"]
    with unit_of_work(sessions) as s:
        s.execute(sa.update(Payment).where(Payment.short_id == ref).values(transaction_hash=HASH))
    test_html = page(shop, f"/dashboard/payments/{ref}")
    assert HASH in text_of(test_html, "transaction") and "not on any chain" in text_of(test_html, "transaction")
    assert not re.search(r'id="transaction"><a ', test_html)  # a test transfer is fake: no link
    with unit_of_work(sessions) as s:  # the same payment, seen as a live one
        s.execute(sa.update(Payment).where(Payment.short_id == ref).values(test_mode=False))
    shop.post("/dashboard/mode", data={"mode": "live", "csrf_token": shop.token})
    live_html = page(shop, f"/dashboard/payments/{ref}")
    link = re.search(r'id="transaction"><a href="([^"]+)"', live_html)
    assert link and link.group(1).startswith("https://") and link.group(1).endswith(HASH)


def test_the_list_shows_date_customer_and_order_id(shop):
    html = page(shop, "/dashboard/payments")
    rows = re.findall(r'<li class="row payment-row">(.*?)</li>', html, re.DOTALL)
    assert len(rows) == 3
    named = next(r for r in rows if shop.made["named"]["short_id"] in r)
    assert "Ada Lovelace" in named and "order ORD-42" in named
    assert re.search(rf'class="payment-date" datetime="{utcnow():%Y-%m-%d}T', named)
    bare = next(r for r in rows if shop.made["bare"]["short_id"] in r)
    assert "no customer" in bare and "payment-order" not in bare
    old = next(r for r in rows if shop.made["old"]["short_id"] in r)
    assert f">{shop.old_day.isoformat()} " in old


def test_the_date_range_filters_the_list_and_the_export_follows(shop):
    today, old = utcnow().date(), shop.old_day
    recent = page(shop, f"/dashboard/payments?from={today - timedelta(days=1)}")
    assert shop.made["old"]["short_id"] not in recent and "2 payments" in recent
    only_old = page(shop, f"/dashboard/payments?from={old}&to={old}")
    assert shop.made["old"]["short_id"] in only_old and "1 payment<" in only_old
    link = re.search(r'<a id="export-csv"[^>]* href="([^"]+)"', only_old).group(1).replace("&amp;", "&")
    assert {f"from={old}", f"to={old}"} == set(link.split("?", 1)[1].split("&"))
    r = shop.get(link)
    assert r.status_code == 200
    rows = list(csv.DictReader(io.StringIO(r.get_data(as_text=True), newline="")))
    assert [row["short_id"] for row in rows] == [shop.made["old"]["short_id"]]
    r = shop.get(f"/dashboard/payments/export.csv?to={old - timedelta(days=1)}")
    assert list(csv.DictReader(io.StringIO(r.get_data(as_text=True), newline=""))) == []


def test_the_first_and_last_days_of_the_calendar_are_dates_like_any_other(shop):
    assert "3 payments" in page(shop, "/dashboard/payments?from=0001-01-01&to=9999-12-31")
    r = shop.get("/dashboard/payments/export.csv?from=0001-01-01&to=9999-12-31")
    assert r.status_code == 200 and len(list(csv.DictReader(io.StringIO(r.get_data(as_text=True))))) == 3


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("from=yesterday", "The from date must be a day"),
        ("to=2026-02-30", "The to date must be a day"),
        ("from=2026-13-01", "The from date must be a day"),
        ("from=2026-03-02&to=2026-03-01", "on or before the to date"),
    ],
)
@pytest.mark.parametrize("path", ["/dashboard/payments", "/dashboard/payments/export.csv"])
def test_a_bad_date_gets_the_400_page(shop, path, query, says):
    r = shop.get(f"{path}?{query}")
    assert r.status_code == 400 and r.mimetype == "text/html"
    assert says in r.get_data(as_text=True)


def test_the_overview_s_recent_payments_show_their_dates(shop):
    html = page(shop, "/dashboard/overview")
    recent = re.search(r'<ul id="recent"[^>]*>(.*?)</ul>', html, re.DOTALL).group(1)
    assert len(re.findall(r'class="payment-date"', recent)) == 3
    assert f">{shop.old_day.isoformat()} " in recent and "Ada Lovelace" in recent
