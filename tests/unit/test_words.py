"""Validation errors in plain words (kassa_api.words): the API's details and the forms'."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kassa_common.products import CreateProduct
from kassa_common.webhooks.endpoints import CreateWebhook
from kassa_api import words
from kassa_api.schemas import CreatePayment


def problems(model, body):
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return words.details(caught.value), words.by_field(caught.value)


def test_bounds_are_numbers_and_name_the_field():
    details, summary = problems(CreatePayment, {"amount": -1, "token": "USDC", "network": "BASE"})
    assert details == [{"field": "amount", "message": "amount must be at least 0.01", "type": "greater_than_equal"}]
    assert summary == {"amount": "Amount must be at least 0.01."}


def test_no_library_text_reaches_anyone():
    details, summary = problems(
        CreatePayment,
        {"amount": "x", "token": "USDC", "network": "BASE", "metadata": {"k" * 60: 1, "n": {}}, "extra": 1},
    )
    text = " ".join(d["message"] for d in details) + " ".join(summary.values())
    for library in ("Input should", "Value error", "Decimal(", "[key]", "Field required", "Extra inputs"):
        assert library not in text
    assert {d["field"] for d in details} == {"amount", "metadata", "metadata.n", "extra"}
    assert "extra is not a field of this request" in text and "the key 'kkkk" in text


def test_forms_get_every_problem_at_once_by_field_in_their_labels():
    _, summary = problems(CreateProduct, {"name": "", "price": "1"})
    assert summary == {"name": "Name must not be empty.", "price": "Price must be a number."}
    _, summary = problems(CreateWebhook, {"url": "ftp://x", "events": []})
    assert summary == {"url": "URL must be an absolute http(s) URL.", "events": "Events needs at least 1 item."}


def test_a_rule_over_several_fields_is_said_once_in_its_own_words():
    details, summary = problems(CreatePayment, {"token": "USDC", "network": "BASE"})
    assert [d["field"] for d in details] == ["amount", "product_id"]
    assert {d["message"] for d in details} == {"give exactly one of amount or product_id"}
    assert summary == {  # beside each of its fields
        "amount": "Give exactly one of amount or product_id.",
        "product_id": "Give exactly one of amount or product_id.",
    }


@pytest.mark.parametrize(
    ("user_agent", "shown"),
    [
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0 Safari/537.36",
            "Chrome on Linux",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1",
            "Safari on iPhone",
        ),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on Windows"),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/126.0 Safari/537.36 Edg/126.0",
            "Edge on macOS",
        ),
        ("Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/126.0 Mobile Safari/537.36", "Chrome on Android"),
        ("curl/8.5.0", "curl/8.5.0"),
        ("x" * 200, "x" * 80),
        (None, "unknown browser"),
    ],
)
def test_a_login_names_its_browser_as_its_owner_knows_it(user_agent, shown):
    assert words.browser_name(user_agent) == shown
