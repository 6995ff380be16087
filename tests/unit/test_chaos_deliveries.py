"""How ``make chaos`` reads the merchant endpoint's deliveries: a signature is checked as the
endpoint checks it when the request arrives, however much later the checks read it."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from kassa_common.webhooks.signing import sign
from kassa_dev.chaos.checks import Deliveries
from kassa_dev.receiver import Hit

SECRET = "whsec_test"


def hit(secret: str, signed_at: float, arrived_at: float) -> Hit:
    body = json.dumps({"id": "evt_1", "event": "payment.created", "test_mode": True, "data": {}}).encode()
    return Hit("/", {"X-Kassa-Signature": sign(secret, int(signed_at), body)}, body, 200, arrived_at)


def signatures(*hits: Hit) -> list[bool]:
    receiver = SimpleNamespace(all=lambda: list(hits))
    return [d.signature_ok for d in Deliveries(receiver, {True: SECRET}).all()]  # type: ignore[arg-type]


def test_a_delivery_read_long_after_it_arrived_keeps_its_valid_signature():
    arrived = time.time() - 600  # ten minutes ago: outside the 300 s tolerance now, not then
    assert signatures(hit(SECRET, arrived - 1, arrived)) == [True]


def test_a_wrong_secret_or_a_signature_already_stale_on_arrival_is_invalid():
    now = time.time()
    assert signatures(hit("whsec_other", now, now), hit(SECRET, now - 400, now)) == [False, False]
