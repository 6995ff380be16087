"""The API reference at /v1/api/docs in real Chromium: the OpenAPI 3.1 document renders
(every operation listed, never "Unable to render this definition"), from the project's own
files only, under the pages' Content-Security-Policy."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from playwright.sync_api import expect

TIMEOUT_MS = 20_000


def test_the_api_reference_renders_every_operation_from_local_files(stack, page):
    document = requests.get(f"{stack.api}/openapi.json", timeout=5).json()
    assert document["openapi"].startswith("3.1")
    expected = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    requested, problems = [], []
    page.on("request", lambda r: requested.append(r.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    page.goto(f"{stack.api}/docs")
    expect(page.locator(".opblock").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".info .title")).to_contain_text("Kassa API")
    shown = {
        (
            b.locator(".opblock-summary-method").inner_text().strip(),
            b.locator(".opblock-summary-path").get_attribute("data-path"),
        )
        for b in page.locator(".opblock").all()
    }
    assert shown == expected
    assert ("GET", "/events") in shown and ("POST", "/payments") in shown
    assert "Unable to render" not in page.content()
    assert page.locator(".errors-wrapper").count() == 0, page.locator(".errors-wrapper").inner_text()
    assert not problems, problems  # CSP violations, failed loads and script errors show here
    assert {urlsplit(u).netloc for u in requested if u.startswith("http")} == {urlsplit(stack.base).netloc}


def test_an_operation_opens_with_its_parameters_and_schemas(stack, page):
    page.goto(f"{stack.api}/docs")
    events = page.locator(".opblock-get .opblock-summary-path[data-path='/events']").first
    expect(events).to_be_visible(timeout=TIMEOUT_MS)
    events.click()
    section = page.locator("#operations-events-list_events")
    for name in ("type", "payment_id", "created_gte", "created_lte", "pageSize"):
        expect(section.locator(f"tr[data-param-name='{name}']")).to_be_visible()
