"""The notifier's emails, rendered from an event alone, and the SMTP_URL it sends through."""

from __future__ import annotations

import smtplib

import pytest

from kassa_common.config import Settings
from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_webhook_sender.email import render, smtp

DASHBOARD = "https://pay.example.com/dashboard"
SHOP = render.Merchant("owner@shop.example", "Shop & Co")


def event(kind: EventType, *, test_mode: bool = False, **data) -> EventEnvelope:
    payment = {
        "payment_id": "p1",
        "id": "p1",
        "short_id": "7KQ2M9XR4T",
        "status": "COMPLETED",
        "amount": 25.0,
        "token": "USDC",
        "network": "BASE",
        "crypto_amount": "25",
        "amount_received": "25",
        "transaction_hash": "0x" + "ab" * 32,
        "customer_email": "jane@buyer.example",
        "customer_name": "Jane",
        "test_mode": test_mode,
        "expires_at": "2026-01-01T01:00:00.000Z",
        "completed_at": "2026-01-01T00:10:00.000Z",
        "transfers": [],
    }
    return EventEnvelope("evt_1", kind, "2026-01-01T00:10:00.000Z", test_mode, {**payment, **data})


def test_a_completed_payment_emails_the_merchant_and_sends_the_customer_a_receipt():
    merchant, receipt = render.emails(event(EventType.PAYMENT_COMPLETED), SHOP, DASHBOARD)
    assert (merchant.kind, merchant.recipient) == ("merchant", "owner@shop.example")
    assert merchant.subject == "Payment 7KQ2M9XR4T completed: 25.00 USD"
    text = merchant.text
    assert "Payment 7KQ2M9XR4T is complete: 25 USDC received on BASE." in text
    assert "Status:" in text and "COMPLETED" in text and "25.00 USD (25 USDC on BASE)" in text
    assert f"{DASHBOARD}/payments/7KQ2M9XR4T" in text and f"{DASHBOARD}/notifications" in text
    assert "Jane <jane@buyer.example>" in text

    assert (receipt.kind, receipt.recipient) == ("receipt", "jane@buyer.example")
    assert receipt.subject == "Receipt for your payment to Shop & Co"
    body = receipt.text
    assert body.startswith("Hello Jane,\n\nThank you for your payment to Shop & Co.")
    for fact in ("25 USDC", "BASE", "0x" + "ab" * 32, "7KQ2M9XR4T", "25.00 USD"):
        assert fact in body
    assert DASHBOARD not in body  # the customer has no dashboard


def test_the_html_alternative_says_the_same_escaped():
    merchant = render.merchant_email(event(EventType.PAYMENT_COMPLETED), SHOP, DASHBOARD)
    assert "Shop &amp; Co" in merchant.html and "Shop & Co" not in merchant.html
    assert f'<a href="{DASHBOARD}/payments/7KQ2M9XR4T">' in merchant.html
    assert "&lt;jane@buyer.example&gt;" in merchant.html


def test_a_partially_paid_payment_emails_the_merchant_only():
    e = event(
        EventType.PAYMENT_PARTIALLY_PAID,
        status="PARTIALLY_PAID",
        amount_received="12.5",
        transaction_hash=None,
        completed_at=None,
    )
    [merchant] = render.emails(e, SHOP, DASHBOARD)
    assert merchant.subject == "Payment 7KQ2M9XR4T partially paid: 12.5 of 25 USDC"
    assert "until 2026-01-01T01:00:00.000Z" in merchant.text


def test_a_late_payment_names_the_late_transfers():
    late = {"amount": "25", "token": "USDC", "tx_hash": "0xlate", "late": True}
    e = event(
        EventType.PAYMENT_LATE_PAYMENT,
        status="EXPIRED",
        amount_received="0",
        transaction_hash=None,
        transfers=[{"amount": "1", "token": "USDC", "tx_hash": "0xearly", "late": False}, late, late],
    )
    [merchant] = render.emails(e, SHOP, DASHBOARD)
    assert merchant.subject == "Late payment for 7KQ2M9XR4T: 50 USDC"
    assert "received 50 USDC after it was EXPIRED" in merchant.text
    assert merchant.text.count("0xlate") == 2 and "0xearly" not in merchant.text


def test_notifications_off_leaves_the_receipt_and_no_customer_email_no_receipt():
    off = render.Merchant("owner@shop.example", "Shop", notify_email=False)
    assert [e.kind for e in render.emails(event(EventType.PAYMENT_COMPLETED), off, DASHBOARD)] == ["receipt"]
    assert [
        e.kind for e in render.emails(event(EventType.PAYMENT_COMPLETED, customer_email=None), SHOP, DASHBOARD)
    ] == ["merchant"]


def test_test_mode_emails_say_so_in_the_subject_and_the_body():
    merchant, receipt = render.emails(event(EventType.PAYMENT_COMPLETED, test_mode=True), SHOP, DASHBOARD)
    assert merchant.subject.startswith("[TEST] Payment 7KQ2M9XR4T completed")
    assert receipt.subject == "[TEST] Receipt for your payment to Shop & Co"
    assert "no funds moved" in merchant.text and "no funds moved" in receipt.text


def test_test_mode_never_emails_a_customer():
    """A test payment's receipt and a test refund's claim link go to the merchant's own address."""
    _, receipt = render.emails(event(EventType.PAYMENT_COMPLETED, test_mode=True), SHOP, DASHBOARD)
    assert receipt.recipient == SHOP.email and "your customer (jane@buyer.example) would get" in receipt.text
    refund = {"id": "r1", "payment_id": "p1", "amount": "2.5", "token": "USDC", "network": "BASE"}
    paid = render.RefundedPayment("7KQ2M9XR4T", "jane@buyer.example", "Jane", "https://pay.example.com/refunds/t0k")
    for test_mode, recipient in ((True, SHOP.email), (False, "jane@buyer.example")):
        created = EventEnvelope(
            "evt_2", EventType.REFUND_CREATED, "2026-01-01T00:10:00.000Z", test_mode, {**refund, "expires_at": "x"}
        )
        [link] = render.refund_emails(created, SHOP, paid, DASHBOARD)
        assert link.recipient == recipient and "https://pay.example.com/refunds/t0k" in link.text
        assert link.subject.startswith("[TEST] ") == test_mode


def test_a_customer_name_is_one_line_in_every_email():
    e = event(EventType.PAYMENT_COMPLETED, customer_name="Jane\r\nBcc: all@evil.example")
    merchant, receipt = render.emails(e, SHOP, DASHBOARD)
    assert receipt.text.startswith("Hello Jane Bcc: all@evil.example,\n")
    assert "Jane Bcc: all@evil.example <jane@buyer.example>" in merchant.text


def test_a_subject_is_one_line_whatever_the_business_name_holds():
    sly = render.Merchant("o@x.example", "Evil\r\nBcc: everyone@example.com")
    receipt = render.receipt(event(EventType.PAYMENT_COMPLETED), sly)
    assert receipt.subject == "Receipt for your payment to Evil Bcc: everyone@example.com"
    assert "payment to Evil Bcc: everyone@example.com." in receipt.text
    msg = smtp.compose(
        sender="Kassa <no-reply@kassa.example>",
        recipient=receipt.recipient,
        subject=receipt.subject,
        text=receipt.text,
        html=receipt.html,
        event_id="evt_1",
        kind="receipt",
    )
    assert msg["Bcc"] is None and msg["Message-ID"] == "<evt_1.receipt@kassa.example>"
    assert msg.get_body(("plain",)).get_content() == receipt.text
    assert msg.get_body(("html",)).get_content() == receipt.html


@pytest.mark.parametrize(
    "url, expected",
    [
        ("smtp://mail.example.com", ("mail.example.com", 25, False, False, None, None)),
        ("smtp://u%40x:p%3Ass@mail.example.com?starttls=true", ("mail.example.com", 587, False, True, "u@x", "p:ss")),
        ("smtps://u:p@mail.example.com", ("mail.example.com", 465, True, False, "u", "p")),
        ("smtp://127.0.0.1:2525?timeout=3", ("127.0.0.1", 2525, False, False, None, None)),
    ],
)
def test_smtp_url_forms(url, expected):
    server = smtp.SmtpServer.from_url(url)
    assert (server.host, server.port, server.tls, server.starttls, server.username, server.password) == expected


def test_the_smtp_password_is_never_shown():
    settings = Settings.from_env({"SMTP_URL": "smtp://user:hunter2@mail.example.com:587?starttls=true"})
    server = smtp.SmtpServer.from_url(settings.sender.smtp_url)
    assert "hunter2" not in repr(settings) and "hunter2" not in repr(server) and "hunter2" not in str(server)
    assert str(server) == "smtp://mail.example.com:587?starttls=true"
    with pytest.raises(ValueError, match="setting SMTP_URL") as refused:
        Settings.from_env({"SMTP_URL": "http://user:hunter2@mail.example.com"})
    assert "hunter2" not in str(refused.value)


def test_smtp_settings_default_to_off_and_a_no_reply_sender():
    settings = Settings.from_env({})
    assert settings.sender.smtp_url is None and settings.sender.smtp_from == "Kassa <no-reply@localhost>"


def test_only_a_refusal_of_the_email_itself_is_permanent():
    assert smtp.permanent(smtplib.SMTPRecipientsRefused({"a@x": (550, b"no such user")}))
    assert not smtp.permanent(smtplib.SMTPRecipientsRefused({"a@x": (450, b"mailbox busy")}))
    assert smtp.permanent(smtplib.SMTPDataError(554, b"rejected"))
    assert not smtp.permanent(smtplib.SMTPDataError(451, b"try later"))
    assert not smtp.permanent(ConnectionRefusedError(111, "Connection refused"))


def test_the_operator_address_is_one_email_or_unset():
    assert Settings.from_env({}).web.operator_email is None
    assert Settings.from_env({"OPERATOR_EMAIL": " ops@shop.example "}).web.operator_email == "ops@shop.example"
    for bad in ("ops@shop.example, evil@x.example", "Ops <ops@shop.example>", "nobody"):
        with pytest.raises(ValueError, match="setting OPERATOR_EMAIL"):
            Settings.from_env({"OPERATOR_EMAIL": bad})
