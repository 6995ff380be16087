"""The refunds:manage scope where keys are made: the CLI's ``--scopes`` and the dashboard's
key form; a key made there can refund."""

from __future__ import annotations

import json
import re

from tests.support.api import API, PAYMENT
from tests.support.cli import kassa  # noqa: F401 (fixture)
from tests.support.dashboard import post
from tests.support.refunds import settle_confirmed


def test_the_cli_makes_a_key_that_can_refund(kassa, make_merchant, client, sessions):
    m = make_merchant()
    help_text = kassa("key", "create", "--help").stdout
    assert "refunds:manage" in help_text
    made = json.loads(
        kassa(
            "--json",
            "key",
            "create",
            "--email",
            m.email,
            "--mode",
            "test",
            "--scopes",
            "payments:create,refunds:manage",
        ).stdout
    )
    headers = {"X-Api-Key": made["key"]}
    p = client.post(f"{API}/payments", json=PAYMENT, headers=headers).get_json()["data"]
    settle_confirmed(sessions, p, 12_340_000)
    r = client.post(f"{API}/payments/{p['id']}/refunds", json={"amount": "1"}, headers=headers)
    assert r.status_code == 201, r.get_data(as_text=True)


def test_the_dashboard_key_form_offers_the_refunds_scope(dash):
    page = dash.get("/dashboard/keys").get_data(as_text=True)
    assert 'name="scopes" value="refunds:manage"' in page
    r = post(dash, "/dashboard/keys", mode="test", scopes="refunds:manage", name="refunds only")
    assert r.status_code == 200
    key = re.search(r"kassa_test_[A-Za-z0-9_-]+", r.get_data(as_text=True)).group(0)
    assert (
        dash.get(f"{API}/refunds/00000000-0000-4000-8000-000000000000", headers={"X-Api-Key": key}).status_code == 404
    )
    assert dash.get(f"{API}/payments", headers={"X-Api-Key": key}).status_code == 403
