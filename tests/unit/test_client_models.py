"""kassa-client's typed objects (pure): exact decimals and aware timestamps from the API's
JSON, unknown fields kept, exact decimals out, and pages walked once each."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from kassa_client import Event, Network, Page, Payment, Product, Refund, ResponseFormatError, Webhook
from kassa_client.encoding import dumps, format_param, parse_datetime, to_decimal
from kassa_client.resources.base import segment

PAYMENT = {
    "id": "p1",
    "short_id": "7KQ2M9XR4T",
    "status": "PENDING",
    "amount": 12.34,
    "token": "USDC",
    "network": "BASE",
    "address": "0xabc",
    "crypto_amount": "12.34",
    "amount_received": "0",
    "exchange_rate": "1",
    "confirmations": 0,
    "required_confirmations": 2,
    "transaction_hash": None,
    "checkout_url": "http://127.0.0.1:8000/pay/7KQ2M9XR4T",
    "customer_email": "ann@example.com",
    "customer_name": None,
    "redirect_url": None,
    "cancel_url": None,
    "product_id": None,
    "metadata": {"order_id": "1001", "n": 1.5},
    "test_mode": True,
    "expires_at": "2026-01-01T01:00:00.000Z",
    "created_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-01T00:00:00.000Z",
    "completed_at": None,
    "settlement_address": None,
    "sweep_transaction_hash": None,
    "swept_at": None,
    "wrong_network": [
        {
            "network": "POLYGON",
            "token": "USDC",
            "amount": "3.000001",
            "transaction_hash": "0xdef",
            "log_index": 4,
            "recovery": "wallet",
        }
    ],
    "transfers": [
        {
            "network": "BASE",
            "token": "USDC",
            "tx_hash": "0x1",
            "log_index": 7,
            "amount": "0.000001",
            "confirmations": 1,
            "status": "SEEN",
            "counted": True,
            "reason": None,
            "late": False,
            "created_at": "2026-01-01T00:00:01.000Z",
        }
    ],
}


def test_amounts_are_exact_decimals_and_timestamps_aware_utc():
    p = Payment.from_dict(PAYMENT)
    assert p.amount == Decimal("12.34") and str(p.amount) == "12.34"
    assert p.crypto_amount == Decimal("12.34") and p.amount_received == Decimal(0)
    assert p.created_at == datetime(2026, 1, 1, tzinfo=UTC) and p.completed_at is None
    assert p.transfers[0].amount == Decimal("0.000001") and p.transfers[0].log_index == 7
    assert p.wrong_network[0].amount == Decimal("3.000001") and p.wrong_network[0].recovery == "wallet"
    assert p.metadata == {"order_id": "1001", "n": 1.5}  # metadata stays JSON


def test_fields_the_client_does_not_know_are_kept():
    newer = {**PAYMENT, "loyalty_points": 12, "fees": {"network": "0.01"}}
    p = Payment.from_dict(newer)
    assert p.extra == {"loyalty_points": 12, "fees": {"network": "0.01"}}
    assert p.to_dict() == newer
    p.to_dict()["fees"]["network"] = "9"
    assert p.to_dict()["fees"]["network"] == "0.01"  # a copy


def test_fields_an_older_api_does_not_send_take_their_default():
    p = Payment.from_dict({k: v for k, v in PAYMENT.items() if k not in ("swept_at", "transfers")})
    assert p.swept_at is None and p.transfers == [] and p.refundable_amount is None and p.currency is None


def test_a_missing_required_field_or_a_wrong_type_is_a_format_error():
    with pytest.raises(ResponseFormatError, match="Payment without its 'short_id'"):
        Payment.from_dict({k: v for k, v in PAYMENT.items() if k != "short_id"})
    with pytest.raises(ResponseFormatError, match=r"Payment\.crypto_amount"):
        Payment.from_dict({**PAYMENT, "crypto_amount": "lots"})
    with pytest.raises(ResponseFormatError, match=r"Payment\.created_at"):
        Payment.from_dict({**PAYMENT, "created_at": 1767225600})
    with pytest.raises(ResponseFormatError, match="JSON object"):
        Payment.from_dict(["not", "an", "object"])  # type: ignore[arg-type]


def test_objects_are_immutable_values():
    p = Payment.from_dict(PAYMENT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.status = "CANCELED"  # type: ignore[misc]
    assert p == Payment.from_dict({**PAYMENT, "unknown": 1})  # equality ignores what the client does not know


def test_other_objects():
    product = Product.from_dict(
        {
            "id": "x",
            "name": "Tea",
            "description": None,
            "price": "0.000000000000000001",
            "currency_type": "CRYPTO",
            "token": "ETH",
            "network": "BASE",
            "active": True,
            "share_link": "http://h/products/x",
            "test_mode": True,
            "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
        }
    )
    assert product.price == Decimal("1E-18")
    hook = Webhook.from_dict(
        {
            "id": "w",
            "url": "https://h/",
            "events": ["payment.completed"],
            "active": True,
            "description": None,
            "test_mode": False,
            "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
            "secret": "whsec_x",
        }
    )
    assert hook.secret == "whsec_x" and "whsec_x" not in repr(hook)
    net = Network.from_dict(
        {
            "name": "BASE",
            "kind": "evm",
            "chain_id": 8453,
            "required_confirmations": 2,
            "live_enabled": True,
            "tokens": [{"symbol": "USDC", "contract": "0x8", "decimals": 6, "native": False}],
        }
    )
    assert net.token("usdc").decimals == 6 and net.token("DOGE") is None
    refund = Refund.from_dict(
        {
            "id": "r",
            "payment_id": "p",
            "status": "AWAITING_ADDRESS",
            "amount": "2.5",
            "token": "USDC",
            "network": "BASE",
            "created_at": "2026-01-01T00:00:00.000Z",
        }
    )
    assert refund.amount == Decimal("2.5") and refund.address is None
    event = Event.from_dict(
        {
            "id": "evt_r",
            "event": "refund.created",
            "timestamp": "2026-01-01T00:00:00Z",
            "test_mode": True,
            "data": refund.to_dict(),
        }
    )
    assert event.refund == refund and event.payment is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-01-01T00:00:00.000Z", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00.1Z", datetime(2026, 1, 1, 0, 0, 0, 100000, tzinfo=UTC)),
        ("2026-01-01T00:00:00.123456789+00:00", datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2026-01-01T00:00:00", datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_timestamps(text, expected):
    assert parse_datetime(text) == expected


def test_decimals_go_out_exactly_as_written():
    body = {
        "amount": Decimal("25.10"),
        "tiny": Decimal("1E-18"),
        "big": Decimal("1E+3"),
        "n": 2,
        "s": "x",
        "list": [Decimal("0.1"), None, True],
    }
    text = dumps(body)
    assert text == b'{"amount":25.10,"tiny":0.000000000000000001,"big":1000,"n":2,"s":"x","list":[0.1,null,true]}'
    assert json.loads(text, parse_float=Decimal)["amount"] == Decimal("25.10")
    with pytest.raises(ValueError):
        dumps({"amount": Decimal("NaN")})
    with pytest.raises(ValueError):
        dumps({"amount": float("inf")})


@pytest.mark.parametrize(
    "value, expected",
    [(Decimal("1.50"), Decimal("1.50")), (12, Decimal(12)), (0.1, Decimal("0.1")), ("25.00", Decimal("25.00"))],
)
def test_amounts_a_caller_gives(value, expected):
    assert to_decimal(value) == expected and str(to_decimal(value)) == str(expected)


@pytest.mark.parametrize("value", [True, "25 USD", None, Decimal("Infinity")])
def test_what_is_not_an_amount(value):
    with pytest.raises((TypeError, ValueError)):
        to_decimal(value)


def test_query_values():
    assert format_param(datetime(2026, 1, 1)) == "2026-01-01T00:00:00+00:00"  # naive: UTC
    assert format_param(True) == "true" and format_param(Decimal("1E+2")) == "100"


def _pages(pages: list[list[str]], fetched: list[int]):
    def fetch(number: int) -> Page[Product]:
        fetched.append(number)
        items = [_product(i) for i in pages[number - 1]] if number <= len(pages) else []
        return Page(items, number, 2, sum(map(len, pages)), len(pages), fetch)

    return fetch


def _product(pid: str) -> Product:
    return Product.from_dict(
        {
            "id": pid,
            "name": pid,
            "price": 1,
            "currency_type": "FIAT",
            "active": True,
            "share_link": "",
            "test_mode": True,
            "created_at": "2026-01-01T00:00:00Z",
        }
    )


def test_a_walk_fetches_each_page_when_it_gets_there_and_stops_after_the_last():
    fetched: list[int] = []
    first = _pages([["a", "b"], ["c", "d"], ["e"]], fetched)(1)
    walk = first.auto_paging_iter()
    assert [next(walk), next(walk)] == [_product("a"), _product("b")] and fetched == [1]
    assert [p.id for p in walk] == ["c", "d", "e"] and fetched == [1, 2, 3]
    last = first.next_page().next_page()
    assert not last.has_more and last.next_page() is None


def test_an_item_pushed_onto_the_next_page_is_not_yielded_twice():
    fetched: list[int] = []
    # "b" was last on page 1; a new item arrived meanwhile, so page 2 starts with it again
    first = _pages([["a", "b"], ["b", "c"], ["d"]], fetched)(1)
    assert [p.id for p in first.auto_paging_iter()] == ["a", "b", "c", "d"]


def test_a_walk_ends_on_an_empty_page_even_if_meta_promised_more():
    fetched: list[int] = []
    first = _pages([["a", "b"], []], fetched)(1)
    first = dataclasses.replace(first, pages=10)
    assert [p.id for p in first.auto_paging_iter()] == ["a", "b"] and fetched == [1, 2]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("7KQ2M9XR4T", "7KQ2M9XR4T"),
        ("a/b", "a%2Fb"),
        ("../x", "..%2Fx"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("a b?c#d", "a%20b%3Fc%23d"),
    ],
)
def test_an_id_is_one_path_segment(value, expected):
    assert segment(value) == expected


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_id_is_refused_before_it_becomes_the_list_route(value):
    with pytest.raises(ValueError):
        segment(value)
