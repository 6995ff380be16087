"""Webhook signatures, Stripe style: ``X-Kassa-Signature: t=<unix seconds>,v1=<hex>``
where ``<hex>`` is HMAC-SHA256 of ``"<t>." + raw body`` under the endpoint's secret.

The sender signs the exact bytes it sends; a merchant verifies the exact bytes it
received (never a re-serialised JSON document)::

    from kassa_common.webhooks.signing import SignatureError, verify_signature

    try:
        verify_signature(secret, request.headers["X-Kassa-Signature"], request.get_data())
    except SignatureError as exc:
        return f"bad signature: {exc}", 400

``verify_signature`` returns True or raises ``SignatureError`` whose message says why
(malformed header, timestamp outside the tolerance, no matching signature). A header
may carry several ``v1=`` entries (one per secret while a secret is being rotated);
one match is enough. Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence

SCHEME = "v1"
MAX_TIMESTAMP_DIGITS = 12  # unix seconds: 10 digits until the year 2286
DEFAULT_TOLERANCE = 300


class SignatureError(ValueError):
    """The signature header does not authenticate the body; the message says why."""


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def compute(secret: str | bytes, timestamp: int, raw_body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + raw_body``."""
    message = f"{int(timestamp)}.".encode() + _bytes(raw_body)
    return hmac.new(_bytes(secret), message, hashlib.sha256).hexdigest()


def sign(secret: str | bytes | Sequence[str | bytes], timestamp: int, raw_body: bytes) -> str:
    """The ``X-Kassa-Signature`` header value for these exact bytes: one ``v1=`` per secret
    given (a sequence: the new secret first, then the one it replaced during its overlap)."""
    secrets = [secret] if isinstance(secret, (str, bytes)) else list(secret)
    return f"t={int(timestamp)}," + ",".join(f"{SCHEME}={compute(s, timestamp, raw_body)}" for s in secrets)


def _timestamp(value: str) -> int:
    """The ``t=`` value as whole seconds: ASCII digits only, at most ``MAX_TIMESTAMP_DIGITS``
    of them. A sign, separators, other scripts' digits or a number of hundreds of digits
    (whose age check would overflow a float) are a malformed header, not another error."""
    if not (0 < len(value) <= MAX_TIMESTAMP_DIGITS and value.isascii() and value.isdigit()):
        raise SignatureError("malformed timestamp in signature header")
    return int(value)


def parse_header(header: str) -> tuple[int, list[str]]:
    """``(timestamp, [v1 signatures])``; unknown schemes are ignored."""
    if not header or not isinstance(header, str):
        raise SignatureError("missing signature header")
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise SignatureError("malformed signature header")
        if key == "t":
            timestamp = _timestamp(value)
        elif key == SCHEME:
            signatures.append(value.strip())
    if timestamp is None:
        raise SignatureError("no timestamp in signature header")
    if not signatures:
        raise SignatureError(f"no {SCHEME} signature in signature header")
    return timestamp, signatures


def verify_signature(
    secret: str | bytes,
    header: str,
    raw_body: bytes | str,
    tolerance: int | None = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs ``raw_body`` with ``secret`` within ``tolerance`` seconds
    of ``now`` (None: no age check); otherwise raise ``SignatureError``."""
    timestamp, signatures = parse_header(header)
    if tolerance is not None:
        current = time.time() if now is None else now
        if abs(current - timestamp) > tolerance:
            raise SignatureError(f"timestamp outside the tolerance of {tolerance}s")
    expected = compute(secret, timestamp, _bytes(raw_body)).encode()
    matched = False
    for candidate in signatures:
        # compare every entry, so timing does not reveal which one matched
        matched |= hmac.compare_digest(expected, candidate.encode("ascii", "replace"))
    if not matched:
        raise SignatureError("no signature matches the body and secret")
    return True
