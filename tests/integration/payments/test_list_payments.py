"""GET /payments: pagination, order, status filter and search, against real PostgreSQL."""

from __future__ import annotations

import secrets

import pytest

from tests.support.api import API, PAYMENT

SPEC_FIELDS = {
    "id",
    "short_id",
    "amount",
    "token",
    "network",
    "status",
    "checkout_url",
    "transaction_hash",
    "customer_email",
    "customer_name",
    "metadata",
    "test_mode",
    "expires_at",
    "created_at",
}


def listing(client, merchant, mode="test", **query):
    r = client.get(f"{API}/payments", query_string=query, headers=merchant.headers(mode))
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.json["success"] is True and r.json["statusCode"] == 200
    return r.json["data"]


def ids(page) -> list[str]:
    return [p["id"] for p in page["data"]]


@pytest.fixture
def seven(merchant, create_payment):
    """Seven payments of one merchant, oldest first."""
    return [create_payment(merchant, {**PAYMENT, "amount": 10 + i}) for i in range(7)]


def test_list_is_newest_first(client, merchant, seven):
    assert ids(listing(client, merchant)) == [p["id"] for p in reversed(seven)]


def test_defaults_are_page_1_and_page_size_10(client, merchant, seven):
    page = listing(client, merchant)
    assert page["meta"] == {"page": 1, "pageSize": 10, "total": 7, "pages": 1}
    assert len(page["data"]) == 7


def test_pages_split_the_list_without_overlap(client, merchant, seven):
    pages = [listing(client, merchant, page=n, pageSize=3) for n in (1, 2, 3)]
    assert [len(p["data"]) for p in pages] == [3, 3, 1]
    assert [p["meta"] for p in pages] == [{"page": n, "pageSize": 3, "total": 7, "pages": 3} for n in (1, 2, 3)]
    assert [i for p in pages for i in ids(p)] == [p["id"] for p in reversed(seven)]


def test_page_past_the_end_is_empty_with_meta(client, merchant, seven):
    page = listing(client, merchant, page=4, pageSize=3)
    assert page["data"] == [] and page["meta"] == {"page": 4, "pageSize": 3, "total": 7, "pages": 3}


def test_page_size_100_is_allowed(client, merchant, seven):
    assert listing(client, merchant, pageSize=100)["meta"]["pageSize"] == 100


def test_empty_list_has_zero_pages(client, merchant):
    assert listing(client, merchant) == {"data": [], "meta": {"page": 1, "pageSize": 10, "total": 0, "pages": 0}}


def test_entries_carry_the_spec_fields(client, merchant, create_payment):
    created = create_payment(merchant, {**PAYMENT, "customer_email": "x@example.com", "metadata": {"o": "1"}})
    [entry] = listing(client, merchant)["data"]
    assert SPEC_FIELDS <= set(entry)
    assert entry == created


def test_list_shows_only_the_merchants_own_payments(client, merchant, make_merchant, create_payment):
    mine = create_payment(merchant)
    create_payment(make_merchant())
    page = listing(client, merchant)
    assert ids(page) == [mine["id"]] and page["meta"]["total"] == 1


def test_status_filter(client, merchant, seven):
    canceled = {p["id"] for p in seven[:2]}
    for pid in canceled:
        assert client.post(f"{API}/payments/{pid}/cancel", headers=merchant.headers()).status_code == 200
    got = listing(client, merchant, status="CANCELED")
    assert set(ids(got)) == canceled and got["meta"]["total"] == 2
    assert set(ids(listing(client, merchant, status="PENDING"))) == {p["id"] for p in seven[2:]}
    assert listing(client, merchant, status="COMPLETED")["meta"]["total"] == 0


def test_status_filter_and_pagination_combine(client, merchant, seven):
    page = listing(client, merchant, status="PENDING", page=2, pageSize=5)
    assert ids(page) == [p["id"] for p in reversed(seven)][5:]
    assert page["meta"] == {"page": 2, "pageSize": 5, "total": 7, "pages": 2}


@pytest.fixture
def people(merchant, create_payment):
    tag = secrets.token_hex(4)
    made = {
        "ann": create_payment(
            merchant, {**PAYMENT, "customer_email": f"ann.{tag}@Example.com", "customer_name": "Ann Smith"}
        ),
        "bob": create_payment(
            merchant, {**PAYMENT, "customer_email": f"bob.{tag}@shop.io", "customer_name": "Bob Jones"}
        ),
        "anon": create_payment(merchant),
    }
    return tag, made


@pytest.mark.parametrize(
    "term, who",
    [
        ("ann.", {"ann"}),
        ("ANN.", {"ann"}),
        ("example.COM", {"ann"}),
        ("shop.io", {"bob"}),
        ("@", {"ann", "bob"}),
    ],
)
def test_search_by_email_is_case_insensitive_substring(client, merchant, people, term, who):
    _, made = people
    assert set(ids(listing(client, merchant, search=term))) == {made[w]["id"] for w in who}


@pytest.mark.parametrize(
    "term, who", [("smith", {"ann"}), ("BOB J", {"bob"}), ("ob jo", {"bob"}), ("n", {"ann", "bob"})]
)
def test_search_by_name_is_case_insensitive_substring(client, merchant, people, term, who):
    _, made = people
    assert set(ids(listing(client, merchant, search=term))) == {made[w]["id"] for w in who}


def test_search_with_unique_email_tag_finds_both_by_tag(client, merchant, people):
    tag, made = people
    assert set(ids(listing(client, merchant, search=tag.upper()))) == {made["ann"]["id"], made["bob"]["id"]}


def test_search_by_id_is_exact(client, merchant, people):
    _, made = people
    target = made["anon"]
    assert ids(listing(client, merchant, search=target["id"])) == [target["id"]]
    assert ids(listing(client, merchant, search=target["id"].upper())) == [target["id"]]
    assert listing(client, merchant, search=target["id"][:8])["data"] == []


def test_search_by_short_id_is_exact_and_case_insensitive(client, merchant, people):
    _, made = people
    target = made["anon"]
    assert ids(listing(client, merchant, search=target["short_id"])) == [target["id"]]
    assert ids(listing(client, merchant, search=target["short_id"].lower())) == [target["id"]]
    assert listing(client, merchant, search=target["short_id"][:6])["data"] == []


def test_search_does_not_find_other_merchants_payments(client, merchant, make_merchant, create_payment):
    other = create_payment(make_merchant(), {**PAYMENT, "customer_name": "Shared Name"})
    assert listing(client, merchant, search="Shared Name")["data"] == []
    assert listing(client, merchant, search=other["id"])["data"] == []
    assert listing(client, merchant, search=other["short_id"])["data"] == []


def test_search_combines_with_status(client, merchant, people):
    _, made = people
    client.post(f"{API}/payments/{made['ann']['id']}/cancel", headers=merchant.headers())
    assert ids(listing(client, merchant, search="@", status="CANCELED")) == [made["ann"]["id"]]


@pytest.fixture
def wildcards(merchant, create_payment):
    names = {"percent": "50% off", "underscore": "snake_case", "plain": "50x off snakeXcase", "backslash": "a\\b"}
    return {k: create_payment(merchant, {**PAYMENT, "customer_name": v})["id"] for k, v in names.items()}


@pytest.mark.parametrize(
    "term, who",
    [
        ("%", {"percent"}),
        ("50%", {"percent"}),
        ("_", {"underscore"}),
        ("snake_case", {"underscore"}),
        ("\\", {"backslash"}),
        ("a\\b", {"backslash"}),
    ],
)
def test_search_treats_percent_underscore_and_backslash_literally(client, merchant, wildcards, term, who):
    assert set(ids(listing(client, merchant, search=term))) == {wildcards[w] for w in who}


def test_blank_search_lists_everything(client, merchant, seven):
    assert listing(client, merchant, search="   ")["meta"]["total"] == 7


def test_search_without_match_is_empty(client, merchant, people):
    page = listing(client, merchant, search=secrets.token_hex(8))
    assert page == {"data": [], "meta": {"page": 1, "pageSize": 10, "total": 0, "pages": 0}}
