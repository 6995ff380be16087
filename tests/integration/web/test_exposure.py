"""What the web shows and takes, tried as an attacker would: the product page's receipt
email as a list of addresses, a webhook URL's password, /metrics without its token."""

from __future__ import annotations

import pytest

from kassa_common.emails import is_valid_email
from kassa_api.app import create_app
from tests.support.api import API
from tests.support.dashboard import csrf_of, log_in

LISTS = [
    "a@x.com, b@y.com, c@z.com",
    "a@x.com;b@y.com",
    "a@x.com b@y.com",
    "Eve <a@x.com>",
    '"a b"@x.com',
    "a,b@x.com",
    "a@x.com\nBcc: b@y.com",
    "a@@x.com",
    "a@x",
    "@x.com",
    "a@x.com.",
]


@pytest.mark.parametrize("text", LISTS)
def test_the_one_email_rule_takes_a_single_plain_address_only(text):
    assert not is_valid_email(text)


@pytest.mark.parametrize("text", ["shop@example.com", "first.last+tag@mail.example.co.uk", "x_y-z@xn--bcher-kva.de"])
def test_ordinary_addresses_pass(text):
    assert is_valid_email(text)


def test_the_product_page_refuses_a_list_of_receipt_emails(client, merchant, create_product):
    product = create_product(merchant)
    page = client.get(f"/products/{product['id']}")
    token = csrf_of(page)
    for text in ("a@x.com, b@y.com, c@z.com", "a@x.com;b@y.com", "Eve <a@x.com>"):
        r = client.post(f"/products/{product['id']}", data={"csrf_token": token, "pair": "BASE:USDC", "email": text})
        assert r.status_code == 422 and "one valid email address" in r.get_data(as_text=True), text
    listed = client.get(f"{API}/payments", headers=merchant.headers()).get_json()
    assert listed["data"]["meta"]["total"] == 0


def test_the_api_refuses_a_list_as_customer_email(client, merchant):
    r = client.post(
        f"{API}/payments",
        headers=merchant.headers(),
        json={"amount": 10, "token": "USDC", "network": "BASE", "customer_email": "a@x.com, b@y.com"},
    )
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "VALIDATION_ERROR"


def test_a_webhook_urls_password_is_never_shown_back(client, merchant, create_webhook, sessions):
    secret_url = "https://hookuser:hunter2-secret@hooks.example.com/in?x=1"
    hook = create_webhook(merchant, url=secret_url)
    assert hook["url"] == "https://hookuser:****@hooks.example.com/in?x=1"
    got = client.get(f"{API}/webhooks/{hook['id']}", headers=merchant.headers()).get_json()["data"]
    listed = client.get(f"{API}/webhooks", headers=merchant.headers()).get_data(as_text=True)
    assert got["url"] == hook["url"] and "hunter2" not in listed
    # the dashboard, logged in as that merchant
    from kassa_common.accounts import merchants, stores
    from kassa_common.db import unit_of_work

    with unit_of_work(sessions) as s:
        stores.account_by_email(s, merchant.email).password_hash = merchants.hash_password("s3cret-pass")
    log_in(client, merchant.email)
    for path in ("/dashboard/webhooks", f"/dashboard/webhooks/{hook['id']}"):
        page = client.get(path).get_data(as_text=True)
        assert "hookuser:****@hooks.example.com" in page and "hunter2" not in page, path


def test_metrics_need_the_bearer_token_when_it_is_set(settings, engine):
    client = create_app(settings.with_(web={"metrics_token": "m-token-123"}), engine=engine).test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Basic m-token-123"}).status_code == 401
    r = client.get("/metrics", headers={"Authorization": "Bearer m-token-123"})
    assert r.status_code == 200 and "kassa_bus_up" in r.get_data(as_text=True)


def test_metrics_stay_open_without_a_token(client):
    assert client.get("/metrics").status_code == 200
