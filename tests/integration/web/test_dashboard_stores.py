"""The dashboard with several stores (DESIGN §14): signing in opens the first store the
account owns, ``POST /dashboard/stores/<id>/switch`` opens another it is a member of, the
session remembers it, and every page acts on the open store only."""

from __future__ import annotations

import secrets
import uuid

from kassa_common import audit
from kassa_common.accounts import keys, merchants, stores
from kassa_common.db import unit_of_work
from tests.support.api import API
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password


def second_store(sessions, email: str, name: str) -> uuid.UUID:
    with unit_of_work(sessions) as s:
        return merchants.create_store(s, email, name).id


def store_of(sessions, email: str) -> uuid.UUID:
    with sessions() as s:
        return merchants.merchant_by_email(s, email).id


def product_in(client, sessions, store_id: uuid.UUID, name: str) -> str:
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, store_id, "test", ["products:manage"]).key
    r = client.post(f"{API}/products", json={"name": name, "price": 5}, headers={"X-Api-Key": key})
    assert r.status_code == 201, r.get_data(as_text=True)
    return r.get_json()["data"]["id"]


def switch(client, store_id, next_path: str = "/dashboard/products", token: str | None = None):
    token = token or csrf_of(client.get("/dashboard/stores"))
    return client.post(f"/dashboard/stores/{store_id}/switch", data={"csrf_token": token, "next": next_path})


def test_an_account_with_two_stores_opens_its_first_switches_and_sees_each_stores_objects_only(app, sessions):
    email = merchant_with_password(sessions)
    first, tea = store_of(sessions, email), second_store(sessions, email, "Tea Corner")
    coffee_product, tea_product = (
        product_in(app.test_client(), sessions, first, "Coffee beans"),
        product_in(app.test_client(), sessions, tea, "Green tea"),
    )
    browser = app.test_client()
    log_in(browser, email)
    page = browser.get("/dashboard/products").get_data(as_text=True)
    assert "Coffee beans" in page and "Green tea" not in page  # the first store it owns is open
    assert 'id="store-switcher"' in page and "Tea Corner" in page  # and the switcher offers the other

    moved = switch(browser, tea)
    assert moved.status_code == 303 and moved.headers["Location"].endswith("/dashboard/products")
    page = browser.get("/dashboard/products").get_data(as_text=True)
    assert "Green tea" in page and "Coffee beans" not in page
    assert browser.get(f"/dashboard/products/{tea_product}").status_code == 200
    assert browser.get(f"/dashboard/products/{coffee_product}").status_code == 404  # the other store's
    assert browser.get("/dashboard/payments").status_code == 200  # remembered from page to page

    listed = browser.get("/dashboard/stores").get_data(as_text=True)
    assert "Tea Corner" in listed and "Dash Ltd" in listed and str(first) in listed

    # an object's page belonged to the store left behind: the switch lands on the overview
    back = switch(browser, first, f"/dashboard/products/{tea_product}")
    assert back.status_code == 303 and back.headers["Location"].endswith("/dashboard/overview")
    assert "Coffee beans" in browser.get("/dashboard/products").get_data(as_text=True)
    switch(browser, tea)
    browser.post("/dashboard/logout", data={"csrf_token": csrf_of(browser.get("/dashboard/stores"))})
    log_in(browser, email)  # a new login opens the first owned store again
    assert "Coffee beans" in browser.get("/dashboard/products").get_data(as_text=True)


def test_the_switch_needs_the_csrf_token_and_opens_no_store_the_account_is_not_a_member_of(app, sessions):
    email, other = merchant_with_password(sessions), merchant_with_password(sessions)
    theirs, mine = store_of(sessions, other), store_of(sessions, email)
    product_in(app.test_client(), sessions, theirs, "Not yours")
    browser = app.test_client()
    log_in(browser, email)
    refused = browser.post(f"/dashboard/stores/{second_store(sessions, email, 'Mine too')}/switch", data={})
    assert refused.status_code == 403  # no CSRF token
    for ref in (theirs, uuid.uuid4(), "not-a-store", "1" * 300):
        r = switch(browser, ref)
        assert r.status_code == 404 and "No such store." in r.get_data(as_text=True), ref
    assert "Not yours" not in browser.get("/dashboard/products").get_data(as_text=True)
    with browser.session_transaction() as cookie:  # a session naming someone else's store opens the own one
        cookie["store"] = str(theirs)
    page = browser.get("/dashboard/products").get_data(as_text=True)
    assert "Not yours" not in page and str(mine) in browser.get("/dashboard/stores").get_data(as_text=True)


def test_a_member_opens_the_store_it_was_added_to_until_it_is_removed(app, sessions):
    owner, member = merchant_with_password(sessions), merchant_with_password(sessions)
    shop = store_of(sessions, owner)
    product_in(app.test_client(), sessions, shop, f"Shared {secrets.token_hex(3)}")
    with unit_of_work(sessions) as s:
        stores.set_member(s, shop, stores.account_by_email(s, member), "manager", actor=audit.OPERATOR)
    browser = app.test_client()
    log_in(browser, member, PASSWORD)
    assert "Shared" not in browser.get("/dashboard/products").get_data(as_text=True)  # its own store first
    assert switch(browser, shop).status_code == 303
    assert "Shared" in browser.get("/dashboard/products").get_data(as_text=True)
    with unit_of_work(sessions) as s:
        stores.remove_member(s, shop, stores.account_by_email(s, member), actor=audit.OPERATOR)
    page = browser.get("/dashboard/products")  # the open store is gone from its list: back to its own
    assert page.status_code == 200 and "Shared" not in page.get_data(as_text=True)
    assert switch(browser, shop).status_code == 404


def test_one_store_shows_no_switcher_and_a_member_of_only_others_stores_still_signs_in(app, sessions):
    alone = merchant_with_password(sessions)
    browser = app.test_client()
    log_in(browser, alone)
    assert 'id="store-switcher"' not in browser.get("/dashboard/products").get_data(as_text=True)

    member = merchant_with_password(sessions)  # its own store banned, a viewer of another's
    with unit_of_work(sessions) as s:
        merchants.merchant_by_email(s, member).banned = True
        stores.set_member(
            s,
            merchants.merchant_by_email(s, alone).id,
            stores.account_by_email(s, member),
            "viewer",
            actor=audit.OPERATOR,
        )
    other = app.test_client()
    log_in(other, member)
    page = other.get("/dashboard/stores").get_data(as_text=True)
    assert "viewer" in page and 'id="store-switcher"' not in page


def test_stores_made_in_one_transaction_keep_the_order_they_were_made_in(sessions):
    email = f"order-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:  # one transaction: now() is the same for every row
        made = [merchants.create_merchant(s, email, PASSWORD, "Store 0", activate=True).id]
        made += [merchants.create_store(s, email, f"Store {i}").id for i in range(1, 6)]
    with sessions() as s:
        account = stores.account_by_email(s, email)
        assert [x.id for x in stores.stores_of(s, account.id)] == made
        assert merchants.merchant_by_email(s, email).id == made[0]  # the commands' store: the first
