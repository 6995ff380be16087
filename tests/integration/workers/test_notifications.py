"""Email notifications through the real pipeline: a test-mode payment paid on its checkout
controls → outbox → relay → settler → outbox → relay → the notifier's queue → notifications
rows → a real SMTP server (aiosmtpd) on a free local port. Each test runs on its own
exchange and queues; other tests' events may reach this notifier too, so every check
looks only at this test's recipients and events."""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta
from decimal import Decimal

import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.messaging.consumer import Delivered
from kassa_common.messaging.publisher import Message
from kassa_common.models import Event, Merchant, Notification, Payment, ProcessedMessage
from kassa_common.payments import testmode
from kassa_common.timefmt import utcnow
from kassa_expirer.jobs import Jobs
from kassa_webhook_sender.email import intake, render
from kassa_webhook_sender.email.channel import Email
from kassa_webhook_sender.email.smtp import SmtpServer
from kassa_webhook_sender.engine.dispatcher import Dispatcher, Outcome, Result
from tests.support.api import LIVE_PAYMENT
from tests.support.bus import bus  # noqa: F401  (fixture)
from tests.support.dashboard import csrf_of, merchant_with_password
from tests.support.notifications import DASHBOARD, arrives, customer, notifier, settler  # noqa: F401  (fixtures)
from tests.support.refunds import settle_confirmed
from tests.support.smtp import smtp, smtp_server  # noqa: F401  (fixture)
from tests.support.stack import free_port
from tests.support.wait import until


def new_payment(client, merchant, **body) -> dict:
    r = client.post(
        "/v1/api/payments", json={"amount": 25, "token": "USDC", "network": "BASE", **body}, headers=merchant.headers()
    )
    assert r.status_code == 201, r.json
    return r.json["data"]


def pay(sessions, payment_id: str, *, part: bool = False) -> None:
    """The checkout's test "pay" / "pay part": a simulated transfer through the outbox and the settler."""
    with unit_of_work(sessions) as s:
        testmode.pay(s, s.get(Payment, uuid.UUID(payment_id)), part=part)


def notifications_of(sessions, payment_id: str) -> list[Notification]:
    with sessions() as s:
        return list(
            s.scalars(
                sa.select(Notification)
                .join(Event, Event.id == Notification.event_id)
                .where(Event.payment_id == uuid.UUID(payment_id))
                .order_by(Notification.kind)
            )
        )


def all_sent(sessions, payment_id: str) -> list[Notification]:
    """The payment's notifications once every one is recorded SENT (the email arrives just before)."""
    return until(
        lambda: (rows := notifications_of(sessions, payment_id)) and all(n.status == "SENT" for n in rows) and rows,
        timeout=10,
        message="the notifications to be recorded SENT",
    )


def test_a_completed_test_payment_emails_the_merchant_and_its_receipt_goes_to_the_merchant_too(
    client, merchant, sessions, bus, smtp, notifier
):
    """Test mode never emails a customer (DESIGN §10): the receipt comes to the merchant,
    marked TEST, so a test key is no mail relay; a newline in the name stays one line."""
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    buyer = customer()
    p = new_payment(client, merchant, customer_email=buyer, customer_name="Jane\nSubject: you won")
    pay(sessions, p["id"])
    arrives(sessions, publisher, lambda: len(inbox.to(merchant.email)) == 2)

    by_kind = {msg["Message-ID"].split(".")[1].split("@")[0]: msg for msg in inbox.to(merchant.email)}
    to_merchant, receipt = by_kind["merchant"], by_kind["receipt"]
    assert to_merchant["Subject"] == f"[TEST] Payment {p['short_id']} completed: 25.00 USD"
    assert to_merchant["From"] == "Kassa <no-reply@localhost>" and to_merchant["To"] == merchant.email
    text = to_merchant.get_body(("plain",)).get_content()
    assert f"{DASHBOARD}/payments/{p['short_id']}" in text and "COMPLETED" in text
    assert "Jane Subject: you won <" in text  # the name on one line
    assert to_merchant.get_body(("html",)) is not None

    assert receipt["Subject"] == "[TEST] Receipt for your payment to Acme Ltd" and receipt["To"] == merchant.email
    body = receipt.get_body(("plain",)).get_content()
    assert "Hello Jane Subject: you won," in body and "25 USDC" in body and "BASE" in body and "test_tx_" in body
    assert "no funds moved" in body and f"your customer ({buyer}) would get" in body
    rows = all_sent(sessions, p["id"])
    assert [(n.kind, n.status, n.recipient) for n in rows] == [
        ("merchant", "SENT", merchant.email),
        ("receipt", "SENT", merchant.email),
    ]
    assert receipt["Message-ID"] == f"<{rows[0].event_id}.receipt@localhost>"
    assert inbox.to(buyer) == []  # never the customer


def test_a_completed_live_payment_sends_its_receipt_to_the_customer_on_one_line(
    client, live_merchant, sessions, bus, smtp, notifier
):
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    buyer = customer()
    body = {**LIVE_PAYMENT, "customer_email": buyer, "customer_name": "Jane\r\nBcc: all@evil.example"}
    r = client.post("/v1/api/payments", json=body, headers=live_merchant.headers("live"))
    assert r.status_code == 201, r.json
    p = r.json["data"]
    settle_confirmed(sessions, p, int(Decimal(p["crypto_amount"]) * 10**6))
    arrives(sessions, publisher, lambda: inbox.to(buyer))
    [receipt] = inbox.to(buyer)
    assert receipt["Subject"] == "Receipt for your payment to Acme Ltd" and receipt["Bcc"] is None
    text = receipt.get_body(("plain",)).get_content()
    assert text.startswith("Hello Jane Bcc: all@evil.example,\r\n\r\n") and "would get" not in text


def test_a_partially_paid_payment_emails_the_merchant_only(client, merchant, sessions, bus, smtp, notifier):
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    buyer = customer()
    p = new_payment(client, merchant, customer_email=buyer)
    pay(sessions, p["id"], part=True)
    arrives(sessions, publisher, lambda: inbox.to(merchant.email))
    [to_merchant] = inbox.to(merchant.email)
    assert to_merchant["Subject"] == f"[TEST] Payment {p['short_id']} partially paid: 12.5 of 25 USDC"
    assert [n.kind for n in all_sent(sessions, p["id"])] == ["merchant"]
    assert inbox.to(buyer) == []


def test_a_late_payment_emails_the_merchant(client, merchant, sessions, bus, smtp, notifier, settler):
    _, _, publisher = bus
    inbox, port = smtp
    notifier(port)
    p = new_payment(client, merchant, customer_email=customer())
    with unit_of_work(sessions) as s:
        testmode.let_expire(s, s.get(Payment, uuid.UUID(p["id"])))
    Jobs(sessions, test_complete_after=timedelta(hours=1)).expire()
    report = {
        "network": "BASE",
        "tx_hash": "0x" + secrets.token_hex(32),
        "log_index": 0,
        "token": "USDC",
        "to": p["address"],
        "amount_units": "25000000",
        "confirmations": 10,
    }
    settler.handle(Delivered(uuid.uuid4().hex, "chain.transfer.confirmed", report, 1))
    arrives(sessions, publisher, lambda: inbox.to(merchant.email))
    [to_merchant] = inbox.to(merchant.email)
    assert to_merchant["Subject"] == f"[TEST] Late payment for {p['short_id']}: 25 USDC"
    assert report["tx_hash"] in to_merchant.get_body(("plain",)).get_content()
    assert [n.kind for n in all_sent(sessions, p["id"])] == ["merchant"]  # no receipt: not completed


def test_notifications_off_send_the_merchant_nothing_but_test_receipts(client, merchant, sessions, bus, smtp, notifier):
    _, _, publisher = bus
    inbox, port = smtp
    with unit_of_work(sessions) as s:
        s.get(Merchant, merchant.id).notify_email = False
    notifier(port)
    buyer = customer()
    p = new_payment(client, merchant, customer_email=buyer)
    pay(sessions, p["id"])
    arrives(sessions, publisher, lambda: inbox.to(merchant.email))  # the receipt still goes (test mode: to them)
    assert [n.kind for n in all_sent(sessions, p["id"])] == ["receipt"]
    [receipt] = inbox.to(merchant.email)
    assert receipt["Subject"].startswith("[TEST] Receipt") and inbox.to(buyer) == []


def test_a_redelivered_event_sends_nothing_twice(client, merchant, sessions, bus, smtp, notifier):
    _, topo, publisher = bus
    inbox, port = smtp
    notifier(port)
    buyer = customer()
    p = new_payment(client, merchant, customer_email=buyer)
    pay(sessions, p["id"])
    arrives(sessions, publisher, lambda: len(inbox.to(merchant.email)) == 2)  # test mode: the receipt too
    all_sent(sessions, p["id"])
    with sessions() as s:
        completed = s.scalar(
            sa.select(Event).where(Event.payment_id == uuid.UUID(p["id"]), Event.type == "payment.completed")
        )
    again = Message(completed.id, completed.type, completed.payload)  # the same message, redelivered
    republished = Message("evt_again_" + secrets.token_hex(6), completed.type, completed.payload)  # another path
    publisher.publish_batch([again, republished])

    def handled() -> bool:
        with sessions() as s:
            return s.get(ProcessedMessage, (topo.notifier.name, republished.message_id)) is not None

    until(handled, timeout=15, message="the republished event to be consumed")  # FIFO: the redelivery was first
    assert [(n.kind, n.status) for n in notifications_of(sessions, p["id"])] == [
        ("merchant", "SENT"),
        ("receipt", "SENT"),
    ]
    assert len(inbox.to(merchant.email)) == 2 and inbox.to(buyer) == []


def test_an_smtp_server_that_is_down_gets_the_emails_once_it_is_up(client, merchant, sessions, bus, notifier):
    _, _, publisher = bus
    port = free_port()  # nothing listens there yet
    notifier(port)
    buyer = customer()
    p = new_payment(client, merchant, customer_email=buyer)
    pay(sessions, p["id"])

    def failed_and_waiting() -> bool:
        rows = notifications_of(sessions, p["id"])
        return len(rows) == 2 and all(n.status == "PENDING" and n.attempts >= 1 and n.last_error for n in rows)

    arrives(sessions, publisher, failed_and_waiting)
    assert "Connection" in notifications_of(sessions, p["id"])[0].last_error

    with smtp_server(port) as (inbox, _):
        until(lambda: len(inbox.to(merchant.email)) == 2, timeout=30, message="the emails after the outage")
        all_sent(sessions, p["id"])
        assert len(inbox.to(merchant.email)) == 2 and inbox.to(buyer) == []  # test mode: the receipt to them
    assert all(n.attempts >= 2 and n.last_error is None for n in notifications_of(sessions, p["id"]))


def test_the_dashboard_switches_notifications_off_and_on(client, sessions):
    email_address = merchant_with_password(sessions)
    token = csrf_of(client.get("/dashboard/login"))
    client.post("/dashboard/login", data={"csrf_token": token, "email": email_address, "password": "s3cret-pass"})
    page = client.get("/dashboard/notifications")
    assert page.status_code == 200 and "checked" in page.get_data(as_text=True)  # on by default
    token = csrf_of(page)

    def notify_email() -> bool:
        with sessions() as s:
            return s.scalar(sa.select(Merchant.notify_email).where(sa.func.lower(Merchant.email) == email_address))

    off = client.post("/dashboard/notifications", data={"csrf_token": token})
    assert off.status_code == 200 and "Email notifications are off." in off.get_data(as_text=True)
    assert notify_email() is False and "checked" not in client.get("/dashboard/notifications").get_data(as_text=True)
    on = client.post("/dashboard/notifications", data={"csrf_token": token, "notify_email": "on"})
    assert "Email notifications are on." in on.get_data(as_text=True) and notify_email() is True


def _receipt_row(client, merchant, sessions):
    """(the customer, the payment.created event, the pending receipt email to the customer) of a new payment."""
    p = new_payment(client, merchant)
    rcpt = customer()
    with unit_of_work(sessions) as s:
        created = s.scalar(sa.select(Event.id).where(Event.payment_id == uuid.UUID(p["id"])))
        [row_id] = intake.record(s, created, [render.Email("receipt", rcpt, "Receipt", ("Thanks.",))])
    return rcpt, created, row_id


def _claim_row(sender: Dispatcher, row_id):
    """Claim until ``row_id`` is among the claimed (other tests' due rows are released again)."""

    def claimed():
        found = None
        for job in sender.claim(5):
            if job.id == row_id:
                found = job
            else:
                sender.record([Outcome(job)])
        return found

    return until(claimed, timeout=15, message="the notification claimed")


def test_a_late_recorder_whose_lease_was_taken_over_leaves_the_sent_email_alone(
    client, merchant, sessions, smtp, caplog
):
    """Sender A's lease runs out mid-send; sender B claims the row and sends it (SENT); A's
    send then ends in a temporary failure. A's outcome must not put SENT back to PENDING
    (which would email the customer again): it is dropped, with a warning."""
    inbox, port = smtp
    rcpt, _created, row_id = _receipt_row(client, merchant, sessions)
    server = SmtpServer.from_url(f"smtp://127.0.0.1:{port}")
    late = Dispatcher(sessions, Email(server, "Kassa <k@shop.example>"), lease_seconds=0.2)
    first = _claim_row(late, row_id)
    fresh = Dispatcher(sessions, Email(server, "Kassa <k@shop.example>"))
    second = _claim_row(fresh, row_id)  # once A's lease has run out
    fresh.record([fresh.attempt(second)])
    fresh.stop()
    failed = Outcome(first, "PENDING", utcnow(), utcnow() + timedelta(minutes=1), Result(error="421 try again later"))
    with caplog.at_level("WARNING", logger="kassa.notifier"):
        late.record([failed])
    late.stop()
    with sessions() as s:
        row = s.get(Notification, row_id)
        assert (row.status, row.attempts, row.lease_until, row.last_error) == ("SENT", 1, None, None)
    assert len(inbox.to(rcpt)) == 1
    assert any(str(row_id) in r.getMessage() and "lease" in r.getMessage() for r in caplog.records)


def test_a_send_interrupted_before_its_outcome_was_recorded_goes_again_with_a_warning(
    client, merchant, sessions, smtp, caplog
):
    inbox, port = smtp
    rcpt, created, row_id = _receipt_row(client, merchant, sessions)
    with unit_of_work(sessions) as s:  # a sender claimed it, sent it and died before recording the outcome
        s.execute(
            sa.update(Notification)
            .where(Notification.id == row_id)
            .values(lease_until=sa.func.now() + sa.text("interval '60 seconds'"))
        )
    with unit_of_work(sessions) as s:  # the lease runs out
        s.execute(
            sa.update(Notification)
            .where(Notification.id == row_id)
            .values(lease_until=sa.func.now() - sa.text("interval '1 second'"))
        )
    sender = Dispatcher(sessions, Email(SmtpServer.from_url(f"smtp://127.0.0.1:{port}"), "Kassa <k@shop.example>"))

    def sent() -> bool:
        sender.record(sender.attempt(job) for job in sender.claim(1))  # (other tests' rows may be due too:
        with sessions() as s:  # sent here, to their own recipients)
            return s.get(Notification, row_id).status == "SENT"

    with caplog.at_level("WARNING", logger="kassa.notifier"):
        until(sent, timeout=15, message="the interrupted notification to be sent again")
    sender.stop()
    assert any(str(row_id) in r.getMessage() and "may get it twice" in r.getMessage() for r in caplog.records)
    [msg] = inbox.to(rcpt)
    assert msg["Message-ID"] == f"<{created}.receipt@shop.example>"
    with sessions() as s:
        row = s.get(Notification, row_id)
        assert (row.status, row.attempts, row.lease_until) == ("SENT", 1, None)
