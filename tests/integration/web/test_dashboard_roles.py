"""Roles on the dashboard (DESIGN §14): every route of the app, visited with every role, is
allowed or refused as the table of ``kassa_api.routes.dashboard.roles`` says; a refused one
answers 403 with a page naming the role it needs, and changes nothing; and no page offers a
role a form it may not send."""

from __future__ import annotations

import html
import re
import secrets
import uuid

import pytest
import sqlalchemy as sa

from kassa_common import audit
from kassa_common.accounts import keys, merchants, stores
from kassa_common.db import unit_of_work
from kassa_common.models import ROLES, Payment, Product
from kassa_api.routes.dashboard import roles
from tests.support.api import API, PAYMENT
from tests.support.dashboard import PASSWORD, csrf_of, log_in, merchant_with_password
from tests.support.refunds import settle_confirmed

SKIPPED_METHODS = {"HEAD", "OPTIONS"}


def dashboard_routes(app) -> list[tuple[str, str, str]]:
    """Every (endpoint, method, rule) of the dashboard, from the app's own URL map."""
    return sorted(
        (rule.endpoint, method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("dashboard.")
        for method in rule.methods - SKIPPED_METHODS
    )


def member(sessions, store_id: uuid.UUID, role: str) -> str:
    """An account that is a member of nothing but ``store_id``, with ``role``; its email."""
    email = f"{role}-{secrets.token_hex(5)}@example.com"
    with unit_of_work(sessions) as s:
        account = stores.new_account(s, email, merchants.hash_password(PASSWORD))
        stores.set_member(s, store_id, account, role, actor=audit.OPERATOR)
    return email


@pytest.fixture
def team(app, sessions):
    """A store and a signed-in dashboard client for each role in it (with its CSRF token)."""
    owner = merchant_with_password(sessions)
    with sessions() as s:
        store_id = merchants.merchant_by_email(s, owner).id
    clients = {}
    for role in ROLES:
        client = app.test_client()
        log_in(client, owner if role == "owner" else member(sessions, store_id, role))
        client.token = csrf_of(client.get("/dashboard/stores"))
        clients[role] = client
    return store_id, clients


def test_every_dashboard_route_has_an_entry_in_the_role_table_and_every_entry_a_route(app):
    routes = {(endpoint.removeprefix("dashboard."), method) for endpoint, method, _ in dashboard_routes(app)}
    assert sorted(routes - set(roles.LEAST_ROLE)) == [], "a dashboard route without a least role in roles.LEAST_ROLE"
    assert sorted(set(roles.LEAST_ROLE) - routes) == [], "roles.LEAST_ROLE names a route the app does not have"
    assert set(roles.LEAST_ROLE.values()) <= {roles.PUBLIC, *ROLES}
    assert roles.least_role("dashboard.no.such_route", "GET") == "owner"  # closed by default


def test_every_dashboard_route_with_every_role_is_allowed_or_refused_as_the_table_says(app, team):
    _, clients = team
    checked = 0
    for endpoint, method, rule in dashboard_routes(app):
        needed = roles.least_role(endpoint, method)
        if needed == roles.PUBLIC:
            continue  # before signing in: no store, no role
        path = rule
        for argument in app.url_map._rules_by_endpoint[endpoint][0].arguments:
            path = path.replace(f"<{argument}>", str(uuid.uuid4()))  # names nothing: nothing is changed
        for role, client in clients.items():
            if method == "GET":
                r = client.get(path)
            else:
                r = client.post(path, data={"csrf_token": client.token})
            body = r.get_data(as_text=True)
            if stores.at_least(role, needed):
                assert r.status_code != 403, (role, method, path, r.status_code, body[:300])
            else:
                assert r.status_code == 403, (role, method, path, r.status_code)
                assert f"This needs the {needed} role" in body, (role, method, path)
            checked += 1
    assert checked >= 4 * 40  # every role over every store route of the app


def test_a_refused_action_says_which_role_it_needs_and_changes_nothing(team, sessions):
    store_id, clients = team
    viewer, employee = clients["viewer"], clients["employee"]
    form = {"name": f"Refused {secrets.token_hex(3)}", "price": "5", "currency_type": "FIAT"}
    r = viewer.post("/dashboard/products", data={"csrf_token": viewer.token, **form})
    body = r.get_data(as_text=True)
    assert r.status_code == 403 and "This needs the employee role" in body
    assert "You are a <strong>viewer</strong>" in body and "Nothing was changed" in body
    with sessions() as s:
        made = s.scalar(sa.select(sa.func.count()).select_from(Product).where(Product.merchant_id == store_id))
    assert made == 0
    assert employee.post("/dashboard/products", data={"csrf_token": employee.token, **form}).status_code in (200, 303)
    keys = employee.get("/dashboard/keys")
    assert keys.status_code == 403 and "This needs the manager role" in keys.get_data(as_text=True)
    wallets = clients["manager"].post("/dashboard/wallets", data={"csrf_token": clients["manager"].token})
    assert wallets.status_code == 403 and "needs the owner role" in wallets.get_data(as_text=True)


def test_the_header_shows_api_keys_only_to_roles_that_may_open_them(team):
    _, clients = team
    for role, client in clients.items():
        page = client.get("/dashboard/payments").get_data(as_text=True)
        assert ('href="/dashboard/keys"' in page) == stores.at_least(role, "manager"), role


FORM_ACTION = re.compile(r'<form\b[^>]*\bmethod="post"[^>]*\baction="([^"]+)"', re.IGNORECASE)


@pytest.fixture
def filled(team, client, sessions):
    """The team's store holding one of each object a page offers an action on: a pending
    payment, a paid one with a refund, a product, a webhook endpoint; the pages that show them."""
    store_id, clients = team
    with unit_of_work(sessions) as s:
        key = keys.create_key(s, store_id, "test", list(keys.SCOPES)).key
    headers = {"X-Api-Key": key}

    def made(path: str, body: dict) -> dict:
        r = client.post(f"{API}{path}", json=body, headers=headers)
        assert r.status_code == 201, r.get_data(as_text=True)
        return r.get_json()["data"]

    pending = made("/payments", PAYMENT)
    with unit_of_work(sessions) as s:  # it stays open, as a customer's would
        s.execute(sa.update(Payment).where(Payment.id == uuid.UUID(pending["id"])).values(test_auto_complete=False))
    paid = made("/payments", {"amount": 12.34, "token": "USDC", "network": "BASE"})
    settle_confirmed(sessions, paid, 15_000_000)
    refund = made(f"/payments/{paid['id']}/refunds", {"amount": "1"})
    product = made("/products", {"name": "Mug", "price": 5})
    hook = made("/webhooks", {"url": "https://hooks.example.com/kassa"})
    pages = ["/dashboard/overview", "/dashboard/payments", "/dashboard/refunds", "/dashboard/products"]
    pages += ["/dashboard/webhooks", "/dashboard/events", "/dashboard/wallets", "/dashboard/sweeps"]
    pages += ["/dashboard/settings", "/dashboard/settings/2fa", "/dashboard/notifications", "/dashboard/keys"]
    pages += ["/dashboard/members", "/dashboard/stores", f"/dashboard/payments/{pending['short_id']}"]
    pages += [f"/dashboard/payments/{paid['short_id']}", f"/dashboard/refunds/{refund['id']}"]
    pages += [f"/dashboard/products/{product['id']}", f"/dashboard/webhooks/{hook['id']}"]
    return clients, pages


def test_no_page_offers_a_role_a_form_it_may_not_send(app, filled):
    clients, pages = filled
    urls = app.url_map.bind("localhost")
    offered: dict[str, set[str]] = {}
    for role, client in clients.items():
        for path in pages:
            r = client.get(path)
            if r.status_code == 403:
                continue  # the page itself needs more
            assert r.status_code == 200, (role, path, r.status_code)
            for action in FORM_ACTION.findall(r.get_data(as_text=True)):
                endpoint, _ = urls.match(html.unescape(action).split("?")[0], method="POST")
                if roles.least_role(endpoint, "POST") == roles.PUBLIC:
                    continue  # logging out
                offered.setdefault(role, set()).add(endpoint)
                assert stores.at_least(role, roles.least_role(endpoint, "POST")), (role, path, endpoint)
    for endpoint in ("dashboard.products.index", "dashboard.refunds.create", "dashboard.wallets.index"):
        assert endpoint in offered["owner"], endpoint  # the pages were full enough to offer them
    assert "dashboard.payments.cancel" in offered["employee"]
