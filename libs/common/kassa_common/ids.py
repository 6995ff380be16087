"""Identifiers and secrets: short ids, event ids, API keys, webhook secrets."""

from __future__ import annotations

import hashlib
import secrets
import uuid

# No 0/O, 1/I/L: short ids are read aloud and typed from screenshots.
SHORT_ID_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
SHORT_ID_LENGTH = 10
KEY_PREFIXES = {"live": "kassa_live_", "test": "kassa_test_"}


def new_short_id() -> str:
    return "".join(secrets.choice(SHORT_ID_ALPHABET) for _ in range(SHORT_ID_LENGTH))


def looks_like_short_id(value: str) -> bool:
    return len(value) == SHORT_ID_LENGTH and all(c in SHORT_ID_ALPHABET for c in value.upper())


def parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


def new_event_id() -> str:
    return "evt_" + uuid.uuid4().hex


def new_api_key(mode: str) -> str:
    return KEY_PREFIXES[mode] + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_mode(key: str) -> str | None:
    for mode, prefix in KEY_PREFIXES.items():
        if key.startswith(prefix):
            return mode
    return None


def new_webhook_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)
