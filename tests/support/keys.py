"""Extended public keys for tests: fresh ones nobody else uses, and one key in another encoding."""

from __future__ import annotations

import secrets

import base58
import coincurve

VERSIONS = {"xpub": "0488b21e", "zpub": "04b24746", "tpub": "043587cf", "vpub": "045f1cf6", "ypub": "049d7cb2"}


def fresh_key(prefix: str = "xpub") -> str:
    """A valid account-level key nobody else uses (so its addresses start at index 0)."""
    payload = (
        bytes.fromhex(VERSIONS[prefix])
        + bytes([3])
        + secrets.token_bytes(4)
        + (0x80000000).to_bytes(4, "big")
        + secrets.token_bytes(32)
        + coincurve.PrivateKey().public_key.format(compressed=True)
    )
    return base58.b58encode_check(payload).decode()


def encoded(key: str, prefix: str) -> str:
    """The same key in another encoding: only the version bytes differ."""
    return base58.b58encode_check(bytes.fromhex(VERSIONS[prefix]) + base58.b58decode_check(key)[4:]).decode()
