"""Webhook signatures: verify that a delivery came from Kassa, and read it as an ``Event``.

Every delivery carries ``X-Kassa-Signature: t=<unix seconds>,v1=<hex>``, where ``<hex>``
is HMAC-SHA256 of ``"<t>." + the raw body`` under the endpoint's secret (``whsec_…``).
While a secret is being rotated the header holds one ``v1=`` per secret; one match is
enough. Verify the exact bytes received, before parsing them (a re-serialised JSON
document does not match)::

    from kassa_client import SignatureVerificationError, construct_event

    @app.post("/hooks/kassa")
    def kassa_hook():
        try:
            event = construct_event(request.get_data(), request.headers.get("X-Kassa-Signature"), SECRET)
        except SignatureVerificationError:
            return "", 400
        if event.type == "payment.completed":
            fulfil(event.data.metadata["order_id"])  # event.data is a Payment
        return "", 200

The timestamp is signed too: a delivery older (or newer) than ``tolerance`` seconds is
refused, so a captured request cannot be replayed later. Deliveries are at least once:
skip an ``event.id`` already handled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Sequence

from kassa_client.errors import SignatureVerificationError
from kassa_client.models.base import ResponseFormatError
from kassa_client.models.events import Event

SIGNATURE_HEADER = "X-Kassa-Signature"
SCHEME = "v1"
MAX_TIMESTAMP_DIGITS = 12  # unix seconds: 10 digits until the year 2286
DEFAULT_TOLERANCE = 300  # seconds


def _bytes(value: str | bytes, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"{what} must be bytes or str (the raw body as received), not {type(value).__name__}")


def compute_signature(secret: str | bytes, timestamp: int, raw_body: bytes | str) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + raw_body`` under ``secret``."""
    message = f"{int(timestamp)}.".encode() + _bytes(raw_body, "raw_body")
    return hmac.new(_bytes(secret, "secret"), message, hashlib.sha256).hexdigest()


def signature_header(
    secret: str | bytes | Sequence[str | bytes], raw_body: bytes | str, timestamp: int | None = None
) -> str:
    """An ``X-Kassa-Signature`` value for ``raw_body`` (for a receiver's own tests): one
    ``v1=`` per secret given."""
    when = int(time.time()) if timestamp is None else int(timestamp)
    secrets = [secret] if isinstance(secret, (str, bytes)) else list(secret)
    return f"t={when}," + ",".join(f"{SCHEME}={compute_signature(s, when, raw_body)}" for s in secrets)


def _timestamp(value: str) -> int:
    """The ``t=`` value as whole seconds: ASCII digits only, at most ``MAX_TIMESTAMP_DIGITS``
    of them. A sign, separators, other scripts' digits or a number of hundreds of digits
    (whose age check would overflow a float) are a malformed header, not another error."""
    if not (0 < len(value) <= MAX_TIMESTAMP_DIGITS and value.isascii() and value.isdigit()):
        raise SignatureVerificationError("malformed timestamp in signature header")
    return int(value)


def parse_signature_header(header: str | None) -> tuple[int, list[str]]:
    """``(timestamp, [v1 signatures])`` from the header; unknown schemes are ignored."""
    if not header or not isinstance(header, str):
        raise SignatureVerificationError("missing signature header")
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise SignatureVerificationError("malformed signature header")
        if key == "t":
            timestamp = _timestamp(value)
        elif key == SCHEME:
            signatures.append(value.strip())
    if timestamp is None:
        raise SignatureVerificationError("no timestamp in signature header")
    if not signatures:
        raise SignatureVerificationError(f"no {SCHEME} signature in signature header")
    return timestamp, signatures


def verify_signature(
    secret: str | bytes,
    header: str | None,
    raw_body: bytes | str,
    tolerance: float | None = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs ``raw_body`` under ``secret`` with a timestamp within
    ``tolerance`` seconds of ``now`` (None: no age check); otherwise raise
    ``SignatureVerificationError`` saying why. Comparisons are constant-time."""
    timestamp, signatures = parse_signature_header(header)
    if tolerance is not None:
        current = time.time() if now is None else now
        if abs(current - timestamp) > tolerance:
            raise SignatureVerificationError(f"timestamp outside the tolerance of {tolerance}s")
    expected = compute_signature(secret, timestamp, raw_body).encode()
    matched = False
    for candidate in signatures:
        # compare every entry, so the time taken does not tell which one matched
        matched |= hmac.compare_digest(expected, candidate.encode("ascii", "replace"))
    if not matched:
        raise SignatureVerificationError("no signature matches the body and secret")
    return True


def construct_event(
    raw_body: bytes | str,
    header: str | None,
    secret: str | bytes,
    tolerance: float | None = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
) -> Event:
    """Verify a delivery (``verify_signature``), then read it as an ``Event``: ``event.type``
    is its name, ``event.data`` a ``Payment`` for ``payment.*`` events (a ``Refund`` for
    ``refund.*``, the JSON object otherwise). A body that verifies but is not an event
    raises ``ResponseFormatError``."""
    verify_signature(secret, header, raw_body, tolerance, now=now)
    try:
        payload = json.loads(_bytes(raw_body, "raw_body"))
    except ValueError as exc:
        raise ResponseFormatError(f"the signed body is not JSON: {exc}") from None
    return Event.from_dict(payload)
