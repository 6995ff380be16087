"""Helpers for tests of the merchant API: the error envelope of DESIGN.md section 3,
keys with chosen scopes and live wallets."""

from __future__ import annotations

import uuid

from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.db import unit_of_work
from kassa_common.payments.addresses import TEST_INDEX_BASE

API = "/v1/api"
PAYMENT = {"amount": 12.34, "token": "USDC", "network": "BASE"}
LIVE_PAYMENT = {"amount": 12.34, "token": "USDC", "network": "LOCAL_EVM"}
# The first address of test mode's EVM wallet (the published test key).
EVM_FIRST = derive_address("evm", TEST_XPUBS["evm"], TEST_INDEX_BASE)


def assert_error(response, status: int, code: str) -> dict:
    """The response is the error envelope with this status and code; returns its ``error``."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"success", "statusCode", "error"}, body
    assert body["success"] is False and body["statusCode"] == status
    error = body["error"]
    assert (
        {"code", "message", "status", "details"} <= set(error) <= {"code", "message", "status", "details", "request_id"}
    ), error
    assert error["code"] == code and error["status"] == status, error
    assert isinstance(error["message"], str) and error["message"].strip()
    assert isinstance(error["details"], list)
    return error


def detail_fields(error: dict) -> set:
    return {d.get("field") for d in error["details"]}


def new_key(sessions, merchant_id: uuid.UUID, mode: str, scopes: list[str]) -> str:
    with unit_of_work(sessions) as s:
        return keys.create_key(s, merchant_id, mode, scopes).key


def set_live_wallet(sessions, merchant_id: uuid.UUID, chain: str = "evm", xpub: str | None = None) -> str:
    """As ``kassa wallet set`` on a development stack (published test keys allowed)."""
    with unit_of_work(sessions) as s:
        return merchants.set_wallet(s, merchant_id, "live", chain, xpub or TEST_XPUBS[chain], allow_test_keys=True).xpub
