"""The refund endpoints in the OpenAPI document: each with its scope, the create's
Idempotency-Key and body, and examples that are valid against their own schemas."""

from __future__ import annotations

import jsonschema
import pytest

from tests.support.api import API

REFUND_ENDPOINTS = {
    ("post", "/payments/{ref}/refunds"),
    ("get", "/payments/{ref}/refunds"),
    ("get", "/refunds/{ref}"),
    ("post", "/refunds/{ref}/cancel"),
    ("post", "/refunds/{ref}/complete"),
}


@pytest.fixture(scope="module")
def document(app):
    r = app.test_client().get(f"{API}/openapi.json")
    assert r.status_code == 200
    return r.json


def operations(document):
    return {(method, path): op for path, ops in document["paths"].items() for method, op in ops.items()}


def validator(document, name: str):
    """The component schema ``name``, its references resolved in the document."""
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    )


def resolve(document, schema):
    ref = schema.get("$ref")
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


@pytest.mark.parametrize("method, path", sorted(REFUND_ENDPOINTS))
def test_each_refund_endpoint_needs_the_refunds_scope(document, method, path):
    op = operations(document)[(method, path)]
    assert op["security"] == [{"ApiKey": []}] and "refunds:manage" in op["description"]
    assert {"401", "403", "404", "429", "default"} <= set(op["responses"])


def test_the_create_documents_its_body_statuses_and_idempotency_key(document):
    op = operations(document)[("post", "/payments/{ref}/refunds")]
    assert {"201", "400", "404", "409"} <= set(op["responses"])
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in op["parameters"])
    body = resolve(document, op["requestBody"]["content"]["application/json"]["schema"])
    assert set(body["properties"]) == {"amount", "reason", "network"} and not body.get("required")


def test_the_examples_are_valid_against_their_schemas(document):
    schemas = document["components"]["schemas"]
    for name in ("CreateRefund", "RefundOut"):
        examples = schemas[name]["examples"]
        assert examples
        check = validator(document, name)
        for example in examples:
            check.validate(example)
    # what the API answers has exactly the example's fields
    assert set(schemas["RefundOut"]["examples"][0]) == set(schemas["RefundOut"]["properties"])
