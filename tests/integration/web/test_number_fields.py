"""A property test over every numeric field of every API route and every dashboard form
(found from the OpenAPI document the app serves and from the dashboard's pages, so a new
route or form is covered at once): huge and tiny exponents, 79+ significant digits,
4,301-digit integers, NaN and Infinity spellings, floats and negative zero are answered
with no 5xx, each quickly (DESIGN §10: numbers are bounded before any arithmetic).

The bound asserted is a generous 5 s per answer, against a loaded machine's noise; the
slowest answer seen is printed (run with ``-s``), and is far below a second."""

from __future__ import annotations

import secrets
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kassa_common.accounts import keys, merchants
from kassa_common.db import unit_of_work
from kassa_common.models import Merchant
from tests.support.api import API, PAYMENT
from tests.support.dashboard import signed_in
from tests.support.number_fields import (
    EDGES,
    ApiField,
    Slowest,
    api_fields,
    body_with,
    fill_path,
    number_texts,
    numeric_forms,
    page_rules,
)
from tests.support.refunds import settle_confirmed

BOUND = 5.0  # seconds; what is seen is well under one


def _seed(client, headers: dict, sessions) -> dict[str, str]:
    """One of each object, so the paths resolve: a payment with confirmed funds, its refund,
    a product, a webhook endpoint and an event."""
    payment = client.post(f"{API}/payments", json=PAYMENT, headers=headers).get_json()["data"]
    settle_confirmed(sessions, payment, 12_340_000)
    refund = client.post(f"{API}/payments/{payment['id']}/refunds", json={"amount": "1"}, headers=headers)
    product = client.post(f"{API}/products", json={"name": "Mug", "price": 3}, headers=headers)
    hook = client.post(f"{API}/webhooks", json={"url": "https://hooks.example.com/n"}, headers=headers)
    event = client.get(f"{API}/events", headers=headers).get_json()["data"]["data"][0]
    assert refund.status_code == product.status_code == hook.status_code == 201
    return {
        "payments": payment["id"],
        "refunds": refund.get_json()["data"]["id"],
        "products": product.get_json()["data"]["id"],
        "webhooks": hook.get_json()["data"]["id"],
        "event_id": event["id"],
        "delivery_id": str(uuid.uuid4()),
    }


@pytest.fixture(scope="module")
def api(app, sessions):
    """A merchant's test key, its objects' ids and the document's numeric fields."""
    client = app.test_client()
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, f"n-{secrets.token_hex(5)}@example.com", None, "Numbers Ltd", True)
        key = keys.create_key(s, m.id, "test", list(keys.SCOPES)).key
    headers = {"X-Api-Key": key}
    document = client.get(f"{API}/openapi.json").get_json()
    return client, headers, _seed(client, headers, sessions), api_fields(document)


def _send(client, headers, ids, f: ApiField, text: str, as_string: bool = False):
    if f.where == "path":
        path = API + fill_path(f.path, ids, (f.name, text))
        return client.open(path, method=f.method.upper(), headers=headers, json=f.base or None)
    path = API + fill_path(f.path, ids)
    if f.where == "query":
        return client.open(path, method=f.method.upper(), headers=headers, query_string={f.name: text})
    return client.open(
        path,
        method=f.method.upper(),
        headers={**headers, "Content-Type": "application/json"},
        data=body_with(f.base, f.name, text, as_string=as_string),
    )


def test_the_document_has_the_numeric_fields_this_walk_covers(api):
    *_, fields = api
    names = {(f.method, f.path, f.where, f.name) for f in fields}
    assert ("post", "/payments", "body", "amount") in names
    assert ("post", "/payments", "body", "metadata.n") in names
    assert ("post", "/payments/{ref}/refunds", "body", "amount") in names
    assert ("patch", "/products/{ref}", "body", "price") in names
    assert ("get", "/events", "query", "created_lte") in names and ("get", "/payments", "query", "page") in names


def test_every_numeric_api_field_takes_every_edge_without_a_5xx(api):
    client, headers, ids, fields = api
    seen = Slowest()
    for f in fields:
        for text in EDGES:
            seen.call(f"{f.method} {f.path} {f.where}:{f.name}={text[:20]}", _send, client, headers, ids, f, text)
            if f.where == "body":  # a decimal string too (the refund amount takes one)
                seen.call(f"{f.method} {f.path} {f.name}=str", _send, client, headers, ids, f, text, True)
    print(f"\n{seen.count} API requests; slowest {seen.seconds * 1000:.0f} ms: {seen.what}")
    assert seen.failures == []
    assert seen.seconds < BOUND, seen.what


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), text=number_texts())
def test_any_number_text_in_any_numeric_api_field_is_answered_quickly(api, data, text):
    client, headers, ids, fields = api
    f = data.draw(st.sampled_from([f for f in fields if f.where != "path"]))  # where numbers are read
    seen = Slowest()
    seen.call(f"{f.method} {f.path} {f.name}", _send, client, headers, ids, f, text, data.draw(st.booleans()))
    assert seen.failures == []
    assert seen.seconds < BOUND, (seen.what, text[:80])


# ---- the dashboard's forms -------------------------------------------------------------------------


SIGNED_OUT = ("/dashboard/login", "/dashboard/forgot", "/dashboard/signup", "/dashboard/reset")  # signing in or up


@pytest.fixture(scope="module")
def dash_forms(app, sessions):
    """Every numeric form of the dashboard's pages (with real objects), each with the client
    that opened it: a signed-in one, or a signed-out one for the sign-in and sign-up pages
    (opening those signs a session out)."""
    client, anonymous = signed_in(app.test_client(), sessions), app.test_client()
    with unit_of_work(sessions) as s:
        merchant_id = s.scalar(sa.select(Merchant.id).where(Merchant.email == client.email))
        key = keys.create_key(s, merchant_id, "test", list(keys.SCOPES)).key
    ids = _seed(app.test_client(), {"X-Api-Key": key}, sessions)
    forms = {}
    for rule in page_rules(app):
        resource = rule.split("/")[2] if rule.count("/") > 1 else ""
        path = rule.replace("<ref>", ids.get(resource, "x"))
        path = path.replace("<refund_id>", ids["refunds"]).replace("<event_id>", ids["event_id"])
        if "<" in path:
            continue  # a token this walk has none of (a reset link, a cancel link)
        opener = anonymous if path.startswith(SIGNED_OUT) else client
        r = opener.get(path)
        if r.status_code == 200:
            for form in numeric_forms(r.get_data(as_text=True), path):
                forms.setdefault((form.action, tuple(form.numeric)), (opener, form))
    return list(forms.values())


def test_every_numeric_form_field_takes_every_edge_without_a_5xx(dash_forms):
    fields = {(form.action, name) for _, form in dash_forms for name in form.numeric}
    assert {("/dashboard/settings", "payment_lifetime"), ("/dashboard/products", "price")} <= fields, fields
    assert any(action.endswith("/refunds") for action, name in fields if name == "amount"), fields
    seen = Slowest()
    for client, form in dash_forms:
        for name in form.numeric:
            for text in [*EDGES, " 1e999999999 ", "1e999999999%"]:
                seen.call(
                    f"{form.action} {name}={text[:20]}",
                    client.post,
                    form.action,
                    data={**form.fields, name: text},
                )
    print(f"\n{seen.count} form posts; slowest {seen.seconds * 1000:.0f} ms: {seen.what}")
    assert seen.failures == []
    assert seen.seconds < BOUND, seen.what
