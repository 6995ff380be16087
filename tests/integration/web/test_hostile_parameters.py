"""Every dashboard and public page walked with hostile values in its path and query string
(huge numbers, NUL, 4 KiB strings, unknown enums): a page may refuse (400, 404, 410...),
it never fails (no 5xx)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from tests.support.dashboard import signed_in

HOSTILE = [
    "99999999999999999999999",
    "-1",
    "0",
    "1e309",
    "NaN",
    "\x00",
    "a\x00b",
    "x" * 4096,
    "%",
    "' OR 1=1 --",
    "UNKNOWN_ENUM",
    "../../etc/passwd",
    "😀" * 50,
    " ",
    "",
]
PARAMS = ["page", "pageSize", "status", "type", "search", "mode", "resent", "next", "q", "network", "token"]


def page_routes(app) -> list[str]:
    """Every GET route of the pages and the dashboard (not the JSON API: it has its own walk)."""
    routes = []
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods or rule.rule.startswith("/v1/api") or rule.endpoint == "static":
            continue
        routes.append(rule.rule)
    return sorted(set(routes))


def fill(rule: str, value: str) -> str:
    return re.sub(r"<(?:[a-z]+:)?[a-z_]+>", quote(value, safe="") or "x", rule)


@pytest.fixture
def logged_in(client, sessions):
    return signed_in(client, sessions)


def test_no_page_answers_5xx_to_hostile_parameters(app, logged_in):
    client = logged_in
    routes = page_routes(app)
    assert "/dashboard/payments" in routes and "/products/<product_id>" in routes and "/pay/<short_id>" in routes
    failures = []
    checked = 0
    for rule in routes:
        if rule.endswith(("/metrics", "/readyz")):
            continue  # they ask the broker: covered by their own tests
        for path in {fill(rule, v) for v in HOSTILE} if "<" in rule else ():  # hostile path parts
            r = client.get(path)
            checked += 1
            if r.status_code >= 500:
                failures.append((path[:80], "", "", r.status_code))
        path = fill(rule, "1")
        for name in PARAMS:  # hostile query values
            for value in HOSTILE:
                r = client.get(path, query_string={name: value})
                checked += 1
                if r.status_code >= 500:
                    failures.append((path[:80], name, value[:20], r.status_code))
    assert checked > 1000
    assert failures == []


def test_a_huge_page_number_is_a_400_page(logged_in):
    r = logged_in.get("/dashboard/payments?page=99999999999999999999999")
    assert r.status_code == 400 and "page number" in r.get_data(as_text=True)
    assert logged_in.get("/dashboard/events?page=99999999999999999999999").status_code == 400
    assert logged_in.get("/dashboard/payments?page=3").status_code == 200
    assert logged_in.get("/dashboard/payments?status=NOT_A_STATUS").status_code == 400
    assert logged_in.get("/dashboard/payments?search=a%00b").status_code == 400
    assert logged_in.get("/dashboard/events?type=payment.nothing").status_code == 400
