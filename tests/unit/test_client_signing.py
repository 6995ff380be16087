"""kassa-client's webhook verification: the same rule as the sender's (kassa_common.webhooks.signing),
and a verified body read as a typed event."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from kassa_common.webhooks import signing as sender
from kassa_client import (
    Payment,
    ResponseFormatError,
    SignatureVerificationError,
    construct_event,
    signature_header,
    verify_signature,
)

SECRET = "whsec_client_test"
T = 1_767_225_600
PAYMENT = {
    "id": "0b7c6a3e-5f43-4a39-9a39-1df1d2f8c001",
    "payment_id": "0b7c6a3e-5f43-4a39-9a39-1df1d2f8c001",
    "short_id": "7KQ2M9XR4T",
    "status": "COMPLETED",
    "amount": 25.1,
    "token": "USDC",
    "network": "BASE",
    "address": "0xabc",
    "crypto_amount": "25.1",
    "amount_received": "25.100001",
    "exchange_rate": "1",
    "confirmations": 2,
    "required_confirmations": 2,
    "transaction_hash": "test_tx_1",
    "checkout_url": "http://127.0.0.1:8000/pay/7KQ2M9XR4T",
    "customer_email": None,
    "customer_name": None,
    "redirect_url": None,
    "cancel_url": None,
    "product_id": None,
    "metadata": {"order_id": "1001"},
    "test_mode": True,
    "expires_at": "2026-01-01T01:00:00.000Z",
    "created_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-01T00:00:05.123Z",
    "completed_at": "2026-01-01T00:00:05.123Z",
    "settlement_address": None,
    "sweep_transaction_hash": None,
    "swept_at": None,
    "wrong_network": [],
    "transfers": [],
}
BODY = json.dumps(
    {
        "id": "evt_1",
        "event": "payment.completed",
        "timestamp": "2026-01-01T00:00:05.123Z",
        "test_mode": True,
        "data": PAYMENT,
    },
    separators=(",", ":"),
).encode()


def test_a_header_signed_by_the_sender_verifies():
    assert verify_signature(SECRET, sender.sign(SECRET, T, BODY), BODY, now=T + 299) is True


def test_the_client_signs_as_the_sender_does():
    assert signature_header(SECRET, BODY, timestamp=T) == sender.sign(SECRET, T, BODY)
    assert signature_header([SECRET, "old"], BODY, timestamp=T) == sender.sign([SECRET, "old"], T, BODY)


def test_during_a_rotation_either_secret_verifies():
    header = sender.sign(["whsec_new", "whsec_old"], T, BODY)
    assert verify_signature("whsec_new", header, BODY, now=T)
    assert verify_signature("whsec_old", header, BODY, now=T)
    with pytest.raises(SignatureVerificationError, match="no signature matches"):
        verify_signature("whsec_other", header, BODY, now=T)


def test_a_changed_body_or_timestamp_is_refused():
    header = sender.sign(SECRET, T, BODY)
    with pytest.raises(SignatureVerificationError, match="no signature matches"):
        verify_signature(SECRET, header, BODY.replace(b"25.100001", b"99.100001"), now=T)
    forged = header.replace(f"t={T}", f"t={T + 1}")
    with pytest.raises(SignatureVerificationError, match="no signature matches"):
        verify_signature(SECRET, forged, BODY, now=T)


@pytest.mark.parametrize("age", [301, -301, 10_000])
def test_a_delivery_outside_the_tolerance_is_refused(age):
    with pytest.raises(SignatureVerificationError, match="tolerance"):
        verify_signature(SECRET, sender.sign(SECRET, T, BODY), BODY, now=T + age)


def test_the_tolerance_is_the_callers():
    header = sender.sign(SECRET, T, BODY)
    assert verify_signature(SECRET, header, BODY, tolerance=None, now=T + 10**6)
    with pytest.raises(SignatureVerificationError):
        verify_signature(SECRET, header, BODY, tolerance=5, now=T + 6)


@pytest.mark.parametrize(
    "header, reason",
    [
        (None, "missing"),
        ("", "missing"),
        ("garbage", "malformed"),
        (f"t={T}", "no v1"),
        ("v1=abc", "no timestamp"),
        ("t=soon,v1=abc", "malformed timestamp"),
    ],
)
def test_malformed_headers_say_why(header, reason):
    with pytest.raises(SignatureVerificationError, match=reason):
        verify_signature(SECRET, header, BODY, now=T)


def test_unknown_schemes_are_ignored_and_v1_still_decides():
    header = f"v0=deadbeef,{sender.sign(SECRET, T, BODY)},v2=cafe"
    assert verify_signature(SECRET, header, BODY, now=T)


def test_a_parsed_body_is_not_accepted_in_place_of_the_raw_bytes():
    with pytest.raises(TypeError, match="raw body"):
        verify_signature(SECRET, sender.sign(SECRET, T, BODY), json.loads(BODY), now=T)  # type: ignore[arg-type]


def test_construct_event_gives_a_typed_payment():
    event = construct_event(BODY, sender.sign(SECRET, T, BODY), SECRET, now=T)
    assert event.id == "evt_1" and event.type == "payment.completed" and event.test_mode is True
    assert event.timestamp == datetime(2026, 1, 1, 0, 0, 5, 123000, tzinfo=UTC)
    assert isinstance(event.data, Payment) and event.payment is event.data and event.refund is None
    assert event.data.amount == Decimal("25.1") and event.data.amount_received == Decimal("25.100001")
    assert event.data.payment_id == event.data.id and event.data.metadata == {"order_id": "1001"}
    assert event.to_dict() == json.loads(BODY)


def test_construct_event_refuses_before_parsing():
    with pytest.raises(SignatureVerificationError):
        construct_event(BODY, sender.sign("whsec_other", T, BODY), SECRET, now=T)


def test_construct_event_keeps_other_event_types_as_json():
    body = json.dumps(
        {
            "id": "evt_2",
            "event": "webhook.test",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "test_mode": False,
            "data": {"webhook_id": "w1", "message": "hello"},
        }
    ).encode()
    event = construct_event(body, sender.sign(SECRET, T, body), SECRET, now=T)
    assert event.data == {"webhook_id": "w1", "message": "hello"} and event.payment is None


def test_a_signed_body_that_is_not_an_event_is_a_format_error():
    body = b'{"hello": "world"}'
    with pytest.raises(ResponseFormatError, match="Event without"):
        construct_event(body, sender.sign(SECRET, T, body), SECRET, now=T)


# Timestamps no real header carries: each is refused as malformed (the library's
# SignatureVerificationError), never an OverflowError from the age check or a timestamp read
# from non-ASCII digits.
ODD_TIMESTAMPS = [
    "9" * 400,
    "9" * 5000,
    "١٧٦٧٢٢٥٦٠٠",
    "𝟏𝟕𝟔𝟕𝟐𝟐𝟓𝟔𝟎𝟎",
    "-1",
    "+1767225600",
    "1_767_225_600",
    " 1767225600 1",
]


@pytest.mark.parametrize("tolerance", [300, None])
@pytest.mark.parametrize("timestamp", ODD_TIMESTAMPS)
def test_a_timestamp_that_is_not_a_plain_number_of_seconds_is_a_verification_error(timestamp, tolerance):
    with pytest.raises(SignatureVerificationError, match="malformed timestamp"):
        verify_signature(SECRET, f"t={timestamp},v1=00", BODY, tolerance=tolerance, now=T)


@pytest.mark.parametrize("header", ["t=,v1=00", "t=1767225600,", ",", "t=1767225600,v1=é", "t=1767225600,v1=\x00"])
def test_any_other_malformed_header_is_a_verification_error(header):
    with pytest.raises(SignatureVerificationError):
        verify_signature(SECRET, header, BODY, now=T)
