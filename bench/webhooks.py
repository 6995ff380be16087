"""Webhook deliveries per sender: one webhook-sender process, a burst of payment events
published by the outbox relay, a local receiver; deliveries/s from the first publish to
the receiver's last answer (every event delivered once to one endpoint). Beside the rate:
the sender's CPU per delivery (user + system, from /proc), the number that noise on a
shared machine moves least."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

import pika
import sqlalchemy as sa

from kassa_common.messaging.messages import EventType
from kassa_common.messaging.publisher import Publisher
from kassa_common.messaging.relay import relay_pending
from kassa_common.models import Payment
from kassa_common.payments.events import record_payment_events
from kassa_common.timefmt import utcnow
from bench.common import ROOT, Bench, Result, cpu_seconds, stop
from bench.fill import fill
from kassa_api.app import create_app
from tests.support.bus import private_topology
from tests.support.receiver import Receiver


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def wait_for_consumer(rabbitmq_url: str, queue: str, timeout: float) -> None:
    """Until ``queue`` has a consumer (one connection, polled)."""
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        channel = conn.channel()
        wait_for(
            lambda: channel.queue_declare(queue, passive=True).method.consumer_count > 0,
            timeout,
            f"a consumer of {queue}",
        )
    finally:
        conn.close()


def run(b: Bench) -> list[Result]:
    n = 100 if b.smoke else 5_000
    logging.getLogger("pika").setLevel(logging.WARNING)  # every connection logs a dozen INFO lines
    merchant_id, key = b.new_merchant()  # its endpoint gets only the events made here
    receiver = Receiver()
    try:
        with private_topology(b.settings().rabbitmq_url) as (prefix, topo), b.engine(2) as (engine, sessions):
            settings = b.settings(BUS_PREFIX=prefix, SECRET_KEY="bench-" + prefix)
            client = create_app(settings, engine=engine).test_client()
            r = client.post(
                "/v1/api/webhooks",
                json={"url": receiver.url, "events": ["payment.completed"]},
                headers={"X-Api-Key": key},
            )
            assert r.status_code == 201, r.get_data(as_text=True)
            fill(engine, merchant_id, n, tag="W", base=4 * 10**12, network="BASE", test_mode=True)
            with sessions() as s, s.begin():
                payments = s.scalars(sa.select(Payment).where(Payment.short_id.like("W%"))).all()
                record_payment_events(s, list(payments), EventType.PAYMENT_COMPLETED, now=utcnow())
            env = {**os.environ, **b.env(), "BUS_PREFIX": prefix, "PYTHONPATH": str(ROOT)}
            sender = subprocess.Popen(
                [sys.executable, "-m", "kassa_webhook_sender.webhooks.main"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            publisher = Publisher(settings.rabbitmq_url, topo.exchange, declare=topo.declare)
            try:
                wait_for_consumer(settings.rabbitmq_url, topo.webhook_intake.name, 60)
                cpu0, t0 = cpu_seconds(sender.pid), time.time()
                relay_pending(sessions, publisher)
                wait_for(lambda: receiver.count() >= n, 120 if not b.smoke else 30, f"{n} webhooks")
                cpu1, last = cpu_seconds(sender.pid), max(h.at for h in receiver.all())
            finally:
                publisher.close()
                stop(sender)
    finally:
        receiver.close()
    ids = {h.headers.get("X-Kassa-Event-Id") for h in receiver.all()}
    if len(ids) != n:
        raise RuntimeError(f"{len(ids)} distinct events delivered of {n}")
    rate = n / (last - t0)
    extra = {"sender_cpu_ms_per_delivery": round((cpu1 - cpu0) * 1000 / n, 3)} if cpu0 is not None else {}
    print(f"   sender CPU: {extra.get('sender_cpu_ms_per_delivery', '?')} ms per delivery", flush=True)
    return [
        Result(
            "webhooks_per_sender",
            f"webhook deliveries, one sender ({n:,} events)",
            "deliveries/s",
            rate,
            "≥ 500/s",
            rate >= 500,
            extra=extra,
        )
    ]
