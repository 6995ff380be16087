"""Property-based tests of every operation in the published OpenAPI document against the
real app on real PostgreSQL: no 5xx, and every response matches the document (status,
content type, body schema). Valid and invalid inputs (schemathesis' positive and negative
modes); bounded and derandomized so it is quick and repeatable."""

from __future__ import annotations

import secrets
import zlib

import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kassa_common import payments
from kassa_common.accounts import keys, merchants
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.config import Settings
from kassa_common.db import unit_of_work
from kassa_common.statuses import TransferStatus
from kassa_api.app import create_app
from tests.support.transfers import report

# The document is read from /v1/api/openapi.json of an app built like the real one; serving
# it needs no database, so it can be loaded when the module is collected. Requests go to the
# session's app (on the test database) below.
schema = schemathesis.openapi.from_wsgi(
    "/v1/api/openapi.json", create_app(Settings.from_env({"KASSA_ENV": "development"}))
)


@schemathesis.check
def valid_requests_are_not_refused_as_malformed(ctx, response, case):
    """A request valid by the document is never a 400: the document states every rule the
    server checks on its own input (exactly one of amount or product_id, each network's
    tokens, CRYPTO vs FIAT products, names with a visible character). What depends on the
    server's state (a network not enabled in this mode, a product not available: 422) is
    not the document's to say, nor are the rules a product update meets together with the
    stored product (a FIAT product given a network, a CRYPTO one left without a token)."""
    meta = case.meta
    if case.method.upper() == "PATCH" and case.path.startswith("/products/"):
        return
    if meta is not None and meta.generation.mode.is_positive and response.status_code == 400:
        raise AssertionError(f"a request valid by the document was refused: {response.text[:500]}")


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    valid_requests_are_not_refused_as_malformed,
]


@pytest.fixture(scope="module")
def fuzz_merchant(sessions):
    """An activated merchant with a live EVM wallet and, per mode, a key with every scope."""
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, f"fuzz-{secrets.token_hex(6)}@example.com", None, "Fuzz Ltd", True)
        merchants.set_wallet(s, m.id, "live", "evm", TEST_XPUBS["evm"], allow_test_keys=True)
        return {mode: keys.create_key(s, m.id, mode, list(keys.SCOPES)).key for mode in ("test", "live")}


@pytest.fixture(scope="module")
def real_ids(app, fuzz_merchant, sessions):
    """Per mode, one payment, product, webhook and refund of the merchant: half of the generated ids
    are swapped for these so the operations also run on objects that exist."""
    client, ids = app.test_client(), {}
    for mode, network in (("test", "BASE"), ("live", "LOCAL_EVM")):
        headers = {"X-Api-Key": fuzz_merchant[mode]}
        made = {
            "payments": client.post(
                "/v1/api/payments", json={"amount": 5, "token": "USDC", "network": network}, headers=headers
            ),
            "products": client.post("/v1/api/products", json={"name": "Fuzzed", "price": 3}, headers=headers),
            "webhooks": client.post("/v1/api/webhooks", json={"url": "https://example.com/h"}, headers=headers),
        }
        assert all(r.status_code == 201 for r in made.values()), [r.json for r in made.values()]
        ids[mode] = {kind: r.json["data"]["id"] for kind, r in made.items()}
        paid = client.post(
            "/v1/api/payments", json={"amount": 5, "token": "USDC", "network": network}, headers=headers
        ).json["data"]
        with unit_of_work(sessions) as s:  # confirmed funds: refunds of it can be made
            payments.settle(s, report(paid, TransferStatus.CONFIRMED, 1_000_000, 10))
        refund = client.post(f"/v1/api/payments/{paid['id']}/refunds", json={"amount": "0.5"}, headers=headers)
        assert refund.status_code == 201, refund.json
        ids[mode]["refunds"] = refund.json["data"]["id"]
    return ids


@schema.parametrize()
# Both key modes. (This parametrization also gives each generated test its own node id:
# with pytest 9, schemathesis' per-operation items otherwise all share one.)
@pytest.mark.parametrize("mode", ["test", "live"])
@hypothesis_settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_operation_conforms_to_the_document(case, mode, app, fuzz_merchant, real_ids):
    ref = (case.path_parameters or {}).get("ref")
    if isinstance(ref, str) and zlib.crc32(ref.encode()) % 2 == 0:
        case.path_parameters["ref"] = real_ids[mode][case.path.split("/")[1]]
    case.call_and_validate(app=app, headers={"X-Api-Key": fuzz_merchant[mode]}, checks=CHECKS)
