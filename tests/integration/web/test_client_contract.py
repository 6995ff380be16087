"""kassa-client held to the API's own OpenAPI document: a method for every operation,
every documented response field a typed field (nothing the API documents lands in
``extra``), nothing demanded that the API may leave out, and every request field and
query parameter reachable by its documented name."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from kassa_client import (
    Delivery,
    DeliveryAttempt,
    Event,
    Kassa,
    Network,
    Payment,
    Product,
    Refund,
    Token,
    Transfer,
    Webhook,
    WrongNetworkFunds,
)

RESPONSES = {
    "PaymentOut": Payment,
    "TransferOut": Transfer,
    "WrongNetworkFunds": WrongNetworkFunds,
    "ProductOut": Product,
    "WebhookOut": Webhook,
    "WebhookWithSecret": Webhook,
    "DeliveryOut": Delivery,
    "AttemptOut": DeliveryAttempt,
    "EventOut": Event,
    "NetworkOut": Network,
    "RefundOut": Refund,
    "TokenOut": Token,
}
KASSA = Kassa("kassa_test_unused")
OPERATIONS = {
    "POST /payments": KASSA.payments.create,
    "GET /payments": KASSA.payments.list,
    "GET /payments/{ref}": KASSA.payments.get,
    "POST /payments/{ref}/cancel": KASSA.payments.cancel,
    "POST /products": KASSA.products.create,
    "GET /products": KASSA.products.list,
    "GET /products/{ref}": KASSA.products.get,
    "PATCH /products/{ref}": KASSA.products.update,
    "DELETE /products/{ref}": KASSA.products.delete,
    "POST /webhooks": KASSA.webhooks.create,
    "GET /webhooks": KASSA.webhooks.list,
    "GET /webhooks/{ref}": KASSA.webhooks.get,
    "PATCH /webhooks/{ref}": KASSA.webhooks.update,
    "DELETE /webhooks/{ref}": KASSA.webhooks.delete,
    "POST /webhooks/{ref}/rotate-secret": KASSA.webhooks.rotate_secret,
    "POST /webhooks/{ref}/test": KASSA.webhooks.test,
    "GET /webhooks/{ref}/deliveries": KASSA.webhooks.deliveries.list,
    "POST /webhooks/{ref}/deliveries/{delivery_id}/redeliver": KASSA.webhooks.deliveries.redeliver,
    "GET /events": KASSA.events.list,
    "GET /events/{event_id}": KASSA.events.get,
    "GET /networks": KASSA.networks.list,
    "POST /payments/{ref}/refunds": KASSA.refunds.create,
    "GET /payments/{ref}/refunds": KASSA.refunds.list,
    "GET /refunds/{ref}": KASSA.refunds.get,
    "POST /refunds/{ref}/cancel": KASSA.refunds.cancel,
    "POST /refunds/{ref}/complete": KASSA.refunds.complete,
}
NOT_FIELDS = {"self", "idempotency_key", "extra", "page_size"}
SERVED_LATER: set[str] = set()  # fields a client sends only when given, before the API documents them


@pytest.fixture(scope="module")
def document(app):
    return app.test_client().get("/v1/api/openapi.json").get_json()


def json_keys(cls) -> dict[str, dataclasses.Field]:
    return {f.metadata.get("json", f.name): f for f in dataclasses.fields(cls) if f.name not in ("extra", "_raw")}


def operations(document) -> dict[str, dict]:
    return {f"{method.upper()} {path}": op for path, ops in document["paths"].items() for method, op in ops.items()}


def keyword_fields(method) -> set[str]:
    return {
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is p.KEYWORD_ONLY and name not in NOT_FIELDS
    }


def test_every_operation_has_a_method(document):
    assert set(operations(document)) == set(OPERATIONS)


@pytest.mark.parametrize("schema", sorted(RESPONSES))
def test_every_documented_field_is_typed(document, schema):
    documented = document["components"]["schemas"][schema]
    fields = json_keys(RESPONSES[schema])
    assert set(documented["properties"]) - set(fields) == set(), "documented fields the client would put in extra"
    demanded = {
        k for k, f in fields.items() if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert demanded - set(documented.get("required", [])) == set(), "fields the client demands and the API may omit"


@pytest.mark.parametrize(
    "operation",
    [
        "POST /payments",
        "POST /products",
        "PATCH /products/{ref}",
        "POST /webhooks",
        "PATCH /webhooks/{ref}",
        "POST /payments/{ref}/refunds",
    ],
)
def test_every_request_field_is_a_parameter_by_its_name(document, operation):
    ref = operations(document)[operation]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    documented = set(document["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
    assert keyword_fields(OPERATIONS[operation]) - SERVED_LATER == documented


@pytest.mark.parametrize(
    "operation", ["GET /payments", "GET /products", "GET /webhooks", "GET /webhooks/{ref}/deliveries", "GET /events"]
)
def test_every_query_parameter_is_a_parameter_by_its_name(document, operation):
    documented = {p["name"] for p in operations(document)[operation].get("parameters", []) if p["in"] == "query"}
    method = OPERATIONS[operation]
    named = keyword_fields(method) | ({"pageSize"} if "page_size" in inspect.signature(method).parameters else set())
    assert named == documented
