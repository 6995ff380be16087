"""The emails, rendered from the event alone (its ``data`` is the payment object as of the
event), so a retry sends what the first attempt would have, whatever the payment did since.

One ``Email`` holds the content once (subject, paragraphs, label/value facts, a link,
a footer); ``text`` and ``html`` are two renderings of it, never two texts to keep in step.
A test-mode payment's emails are sent too (merchants test their flow with them) and say
"[TEST]" in the subject; but test mode never emails a customer (DESIGN §10): the receipt and
the refund claim link of a test object go to the merchant's own address instead, so a test
key (no funds, no wallet) is no relay for mail to strangers. A customer's name is one line
wherever an email shows it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from kassa_common.messaging.messages import EventEnvelope, EventType
from kassa_common.pricing import currencies

MERCHANT, RECEIPT = "merchant", "receipt"  # the kinds of notification, one of each per event at most
CUSTOMER = "customer"  # a refund's claim link, to the payment's customer_email
TEST_PREFIX = "[TEST] "
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Email:
    kind: str
    recipient: str
    subject: str
    paragraphs: tuple[str, ...]
    facts: tuple[tuple[str, str], ...] = ()
    link: tuple[str, str] | None = None  # (label, URL)
    footer: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        parts = list(self.paragraphs)
        if self.facts:
            width = max(len(label) for label, _ in self.facts) + 1
            parts.append("\n".join(f"{label + ':':<{width}} {value}" for label, value in self.facts))
        if self.link:
            parts.append(f"{self.link[0]}:\n{self.link[1]}")
        if self.footer:
            parts.append("--\n" + "\n".join(self.footer))
        return "\n\n".join(parts) + "\n"

    @property
    def html(self) -> str:
        e = html.escape
        out = [f"<p>{e(p)}</p>" for p in self.paragraphs]
        if self.facts:
            rows = "".join(
                f'<tr><th align="left" style="padding-right:12px">{e(label)}</th><td>{e(value)}</td></tr>'
                for label, value in self.facts
            )
            out.append(f"<table>{rows}</table>")
        if self.link:
            out.append(f'<p><a href="{e(self.link[1])}">{e(self.link[0])}</a></p>')
        if self.footer:
            out.append('<p style="color:#666;font-size:small">' + "<br>".join(e(line) for line in self.footer) + "</p>")
        body = "\n".join(out)
        return f'<!doctype html>\n<html><body style="font-family:sans-serif">\n{body}\n</body></html>\n'


@dataclass(frozen=True)
class Merchant:
    """Who the merchant's emails go to, and what the receipts call the business."""

    email: str
    business_name: str
    notify_email: bool = True


def one_line(text: str) -> str:
    """Runs of whitespace as one space: a business name could hold a newline."""
    return _SPACE.sub(" ", text).strip()


def subject(text: str, test_mode: bool) -> str:
    """One line, ``[TEST]`` first in test mode."""
    line = one_line(text)
    return TEST_PREFIX + line if test_mode else line


def _sum(amounts: list[str]) -> str:
    try:
        total = sum((Decimal(a) for a in amounts), Decimal(0))
    except InvalidOperation:
        return " + ".join(amounts)
    return format(total.normalize(), "f") if total else "0"


def _usd(data: Mapping[str, Any]) -> str:
    """The payment's amount in its currency ("12.50 EUR", "400 JPY"; USD for events from before currencies)."""
    code = data.get("currency") or "USD"
    return f"{currencies.amount_text(data['amount'], code)} {code}"


def _customer(data: Mapping[str, Any]) -> str | None:
    name, email = data.get("customer_name"), data.get("customer_email")
    name = one_line(name) if name else None
    if name and email:
        return f"{name} <{email}>"
    return name or email


def merchant_email(event: EventEnvelope, merchant: Merchant, dashboard_url: str) -> Email:
    """To the merchant's account email: what happened to which payment, and where to see it."""
    d = event.data
    short, token, received = d["short_id"], d["token"], d["amount_received"]
    if event.event == EventType.PAYMENT_COMPLETED:
        title = f"Payment {short} completed: {_usd(d)}"
        lead = f"Payment {short} is complete: {received} {token} received on {d['network']}."
    elif event.event == EventType.PAYMENT_PARTIALLY_PAID:
        title = f"Payment {short} partially paid: {received} of {d['crypto_amount']} {token}"
        lead = (
            f"Payment {short} is partially paid: {received} of {d['crypto_amount']} {token} received. "
            f"The customer can send the rest until {d['expires_at']}; after that the payment expires "
            f"with what was received."
        )
    elif event.event == EventType.PAYMENT_LATE_PAYMENT:
        late = [t for t in d.get("transfers", []) if t.get("late")]
        amount = _sum([t["amount"] for t in late]) if late else "?"
        title = f"Late payment for {short}: {amount} {token}"
        lead = (
            f"Payment {short} received {amount} {token} after it was {d['status']}. Its status does not "
            f"change: settle it with the customer (e.g. refund or fulfil the order)."
        )
    else:
        raise ValueError(f"no merchant email for {event.event}")
    facts = [
        ("Payment", short),
        ("Status", d["status"]),
        ("Amount", f"{_usd(d)} ({d['crypto_amount']} {token} on {d['network']})"),
        ("Received", f"{received} {token}"),
    ]
    if event.event == EventType.PAYMENT_LATE_PAYMENT:
        facts += [
            ("Late transfer", f"{t['amount']} {t['token']} in {t['tx_hash']}")
            for t in d.get("transfers", [])
            if t.get("late")
        ]
    elif d.get("transaction_hash"):
        facts.append(("Transaction", d["transaction_hash"]))
    if _customer(d):
        facts.append(("Customer", _customer(d)))
    paragraphs = [lead]
    if event.test_mode:
        paragraphs.append("This is a test-mode payment: no funds moved. Switch the dashboard to test mode to see it.")
    footer = (
        f"You get these emails because email notifications are on for {one_line(merchant.business_name)}.",
        f"Turn them off: {dashboard_url}/notifications",
    )
    return Email(
        MERCHANT,
        merchant.email,
        subject(title, event.test_mode),
        tuple(paragraphs),
        tuple(facts),
        ("See the payment in your dashboard", f"{dashboard_url}/payments/{short}"),
        footer,
    )


def _greeting(name: str | None) -> str:
    return f"Hello {one_line(name)}," if name and one_line(name) else "Hello,"


def _test_copy(event: EventEnvelope, merchant: Merchant, customer_email: str) -> tuple[str, list[str]]:
    """Who gets a customer's email and what it says first: the customer, or in test mode the
    merchant (never a customer: a test key must not send mail to strangers), told why."""
    if not event.test_mode:
        return customer_email, []
    why = (
        f"Test mode: this is the email your customer ({customer_email}) would get for a live payment. "
        "Test mode never emails customers; it comes to you instead."
    )
    return merchant.email, [why]


def receipt(event: EventEnvelope, merchant: Merchant) -> Email | None:
    """To the payment's ``customer_email`` (in test mode to the merchant's own address), on
    completion only (None otherwise, or without one)."""
    d = event.data
    if event.event != EventType.PAYMENT_COMPLETED or not d.get("customer_email"):
        return None
    business = one_line(merchant.business_name)
    recipient, first = _test_copy(event, merchant, d["customer_email"])
    paragraphs = [
        *first,
        _greeting(d.get("customer_name")),
        f"Thank you for your payment to {business}. This is your receipt.",
    ]
    facts = [
        ("Amount paid", f"{d['amount_received']} {d['token']}"),
        ("Network", d["network"]),
        ("Price", _usd(d)),
        ("Transaction", d.get("transaction_hash") or "—"),
        ("Reference", d["short_id"]),
        ("Paid to", business),
    ]
    if d.get("completed_at"):
        facts.append(("Date", d["completed_at"]))
    footer = [f"Questions about your order? Contact {business}; this address does not read replies."]
    if event.test_mode:
        footer.insert(0, "This is the receipt of a test payment: no funds moved.")
    return Email(
        RECEIPT,
        recipient,
        subject(f"Receipt for your payment to {business}", event.test_mode),
        tuple(paragraphs),
        tuple(facts),
        None,
        tuple(footer),
    )


@dataclass(frozen=True)
class RefundedPayment:
    """What a refund's emails say of its payment (a refund event carries the refund only)."""

    short_id: str
    customer_email: str | None
    customer_name: str | None
    claim_url: str | None = None  # the refund's claim link (never in the event: it is read from the refund)


def refund_claim_link(event: EventEnvelope, merchant: Merchant, payment: RefundedPayment) -> Email | None:
    """On ``refund.created``, to the payment's ``customer_email`` (None without one; in test
    mode to the merchant's own address): the claim link, where the customer gives the address
    to refund to."""
    d = event.data
    if event.event != EventType.REFUND_CREATED or not payment.customer_email or not payment.claim_url:
        return None
    business = one_line(merchant.business_name)
    amount = f"{d['amount']} {d['token']}"
    recipient, first = _test_copy(event, merchant, payment.customer_email)
    paragraphs = [
        *first,
        _greeting(payment.customer_name),
        f"{business} is refunding {amount} of your payment {payment.short_id}.",
        (
            f"Open the link below and give the address of your own wallet that receives {d['token']} on "
            f"{d['network']}; {business} then sends the refund there."
        ),
    ]
    facts = [
        ("Refund", amount),
        ("Network", d["network"]),
        ("Payment reference", payment.short_id),
        ("Claim it by", d["expires_at"]),
    ]
    footer = [
        "Keep this link to yourself: whoever opens it can say where the refund goes.",
        f"Questions? Contact {business}; this address does not read replies.",
    ]
    if event.test_mode:
        footer.insert(0, "This is a test refund: no funds move.")
    return Email(
        CUSTOMER,
        recipient,
        subject(f"Your refund from {business}: claim it", event.test_mode),
        tuple(paragraphs),
        tuple(facts),
        ("Claim your refund", payment.claim_url),
        tuple(footer),
    )


def refund_claimed(event: EventEnvelope, merchant: Merchant, payment: RefundedPayment, dashboard_url: str) -> Email:
    """On ``refund.claimed``, to the merchant: "refund claimed: pay it", with exactly what to
    send where. Sent whatever the notification setting: it asks for an action."""
    d = event.data
    refunded = f"{d['amount']} {d['token']}"
    amount = f"{d.get('payout_amount') or d['amount']} {d['token']}"  # the amount and its tag
    paragraphs = [
        (
            f"The customer of payment {payment.short_id} claimed a refund of {refunded}. Pay it: send exactly "
            f"{amount} on {d['network']} to the address below, from any wallet."
        ),
        (
            "The few base units over the refund's amount are its tag: Kassa watches the address for a transfer of "
            "exactly this amount and completes the refund once it is confirmed on chain; you can also submit the "
            "transaction hash on the payment's page."
        ),
        (
            "The address came from the claim link: whoever has the link could give it. If you did not send the link "
            "to your customer yourself, check the address with them before you pay."
        ),
    ]
    if event.test_mode:
        paragraphs.append(
            "This is a test-mode refund: no funds move. Simulate its payout on its page in your dashboard "
            "(test mode) or with `kassa dev pay-refund`."
        )
    facts = [
        ("Pay", amount),
        ("Network", d["network"]),
        ("To address", d["address"]),
        ("Payment", payment.short_id),
        ("Refund", d["id"]),
    ]
    if d.get("reason"):
        facts.append(("Reason", one_line(d["reason"])))
    footer = (f"Sent to {one_line(merchant.business_name)} for every claimed refund: it needs your payment.",)
    return Email(
        MERCHANT,
        merchant.email,
        subject(f"Refund claimed: pay {amount} on {d['network']}", event.test_mode),
        tuple(paragraphs),
        tuple(facts),
        ("See the payment and its refunds in your dashboard", f"{dashboard_url}/payments/{payment.short_id}"),
        footer,
    )


def refund_emails(
    event: EventEnvelope, merchant: Merchant, payment: RefundedPayment, dashboard_url: str
) -> list[Email]:
    """What a refund event sends: the claim link to the customer, or the merchant's "pay it"."""
    if event.event == EventType.REFUND_CLAIMED:
        return [refund_claimed(event, merchant, payment, dashboard_url)]
    link = refund_claim_link(event, merchant, payment)
    return [link] if link else []


def emails(event: EventEnvelope, merchant: Merchant, dashboard_url: str) -> list[Email]:
    """What ``event`` sends: the merchant's email (if its notifications are on) and the receipt."""
    out = [merchant_email(event, merchant, dashboard_url)] if merchant.notify_email else []
    customer = receipt(event, merchant)
    return out + ([customer] if customer else [])
