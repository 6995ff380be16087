"""The OpenAPI 3.1 document, generated from the ``@endpoint`` declarations and the same
pydantic models that validate requests."""

from __future__ import annotations

import re
import typing
from typing import Any

from flask import Flask
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from kassa_common.chains.networks import Registry
from kassa_common.fields import PageMeta
from kassa_common.pricing import currencies
from kassa_api.endpoint import EndpointSpec

REF = "#/components/schemas/{model}"
ERROR_SCHEMA = {
    "type": "object",
    "required": ["success", "statusCode", "error"],
    "properties": {
        "success": {"const": False},
        "statusCode": {"type": "integer"},
        "error": {
            "type": "object",
            "required": ["code", "message", "status", "details"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "status": {"type": "integer"},
                "details": {"type": "array", "items": {"type": "object"}},
                "request_id": {"type": "string"},
            },
        },
    },
}
ERROR_TEXT = {
    400: "Invalid request (BAD_REQUEST or VALIDATION_ERROR)",
    401: "Missing, unknown or revoked key",
    403: "The key lacks the scope",
    404: "Not found",
    409: "Conflict",
    413: "Request body larger than 64 KiB (PAYLOAD_TOO_LARGE)",
    414: "URL (path and query) longer than 4096 bytes (URI_TOO_LONG)",
    422: "Cannot be processed",
    429: "Rate limit exceeded",
    503: "Temporarily unavailable",
}


def _models(spec: EndpointSpec) -> list[type[BaseModel]]:
    found = []
    for candidate in (spec.body, spec.query, spec.response):
        for arg in (candidate, *typing.get_args(candidate)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                found.append(arg)
    return found


def _ref(model: Any) -> dict:
    if typing.get_origin(model) is list:
        return {"type": "array", "items": _ref(typing.get_args(model)[0])}
    return {"$ref": REF.format(model=model.__name__)}


def _success(spec: EndpointSpec) -> dict:
    data = _ref(spec.response) if spec.response is not None else {}
    props: dict[str, Any] = {"success": {"const": True}, "statusCode": {"type": "integer"}, "data": data}
    required = ["success", "statusCode", "data"]
    if spec.envelope == "list":
        props["meta"] = _ref(PageMeta)
        required.append("meta")
    if spec.envelope == "bare":
        del props["statusCode"]
        required.remove("statusCode")
    if spec.envelope == "raw":
        return data
    return {"type": "object", "required": required, "properties": props}


def _param_schema(prop: dict) -> dict:
    """A query parameter's schema: an absent parameter is how "none" is said, so the
    ``null`` branch of an optional field does not apply; pydantic's titles are noise."""
    prop = {k: v for k, v in prop.items() if k != "title"}
    branches = [b for b in prop.get("anyOf", []) if b != {"type": "null"}]
    if "anyOf" in prop and len(branches) == 1:
        prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **branches[0]}
        if prop.get("default", 0) is None:
            del prop["default"]
    return prop


def _query_params(model: type[BaseModel] | None, schemas: dict) -> list[dict]:
    if model is None:
        return []
    schema = schemas[model.__name__]
    required = set(schema.get("required", []))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": _param_schema(prop)}
        for name, prop in schema["properties"].items()
    ]


def _registry_values(node: Any, values: dict[str, list[str]]) -> None:
    """Replace each ``x-kassa-values`` marker (schemas.TokenCode/NetworkCode) by the enum of
    what this server's network registry accepts."""
    if isinstance(node, dict):
        kind = node.pop("x-kassa-values", None)
        if kind is not None and values.get(kind):
            node["enum"] = values[kind]
        for child in node.values():
            _registry_values(child, values)
    elif isinstance(node, list):
        for child in node:
            _registry_values(child, values)


def _no_nul(node: Any) -> None:
    """Every string refuses NUL characters (PostgreSQL text cannot hold one): say so."""
    if isinstance(node, dict):
        if node.get("type") == "string" and not ({"enum", "const", "format"} & node.keys()):
            node["not"] = {"pattern": "\u0000"}
        if isinstance(node.get("propertyNames"), dict):  # object keys are strings too
            node["propertyNames"]["not"] = {"pattern": "\u0000"}
        for child in list(node.values()):
            _no_nul(child)
    elif isinstance(node, list):
        for child in node:
            _no_nul(child)


def _whole(field: str, codes: list[str]) -> list[dict[str, Any]]:
    """Currencies without minor units (JPY) take whole amounts only."""
    zero = [c for c in codes if currencies.minor_units(c) == 0]
    return (
        [
            {
                "if": {"properties": {"currency": {"enum": zero}}, "required": ["currency"]},
                "then": {"properties": {field: {"multipleOf": 1}}},
            }
        ]
        if zero
        else []
    )


def _precision(networks: list) -> list[dict[str, Any]]:
    """A CRYPTO price has at most its token's decimals: one rule per token and decimals (its
    networks listed), not per network, so the branches stay few as networks are added, within
    what generators of test data can expand."""
    where: dict[tuple[str, int], list[str]] = {}
    for n in networks:
        for t in n.tokens:
            where.setdefault((t.symbol, t.decimals), []).append(n.name)
    return [
        {
            "if": {
                "properties": {"network": {"enum": names}, "token": {"const": symbol}},
                "required": ["network", "token"],
            },
            "then": {"properties": {"price": {"multipleOf": float(f"1e-{decimals}")}}},
        }
        for (symbol, decimals), names in where.items()
    ]


def _cross_field_rules(schemas: dict[str, Any], networks: list, codes: list[str]) -> None:
    """State in the document the rules the server checks across fields, so a request valid
    by the document is never refused for them: exactly one of amount or product_id; each
    network's own tokens; CRYPTO products need a token and network (priced in the token's
    units), FIAT ones take neither (priced in cents)."""

    def token_of(network, nullable: bool) -> list[dict[str, Any]]:
        tokens: list[Any] = sorted({t.symbol for t in network.tokens})
        return [
            {
                "if": {"properties": {"network": {"const": network.name}}, "required": ["network"]},
                "then": {"properties": {"token": {"enum": tokens + ([None] if nullable else [])}}},
            }
        ]

    def priced_in(kind: str) -> dict[str, Any]:  # the product's currency_type is CRYPTO or FIAT
        return {"properties": {"currency_type": {"const": kind}}, "required": ["currency_type"]}

    def in_its_token() -> dict[str, Any]:  # a CRYPTO price is in its token: no currency but the default
        return {
            "if": priced_in("CRYPTO"),
            "then": {
                "properties": {
                    "currency": {"enum": [currencies.DEFAULT, None]},
                    "token": {"type": "string"},
                    "network": {"type": "string"},
                }
            },
        }

    def in_cents() -> dict[str, Any]:  # a FIAT price takes no token nor network, and is in cents
        return {
            "properties": {"token": {"type": "null"}, "network": {"type": "null"}, "price": {"multipleOf": 0.01}},
            "allOf": _whole("price", codes),
        }

    payment = schemas.get("CreatePayment")
    if payment is not None:
        payment["oneOf"] = [
            {"required": ["amount"], "properties": {"amount": {"type": "number"}}},
            {"required": ["product_id"], "properties": {"product_id": {"type": "string"}}},
        ]
        payment["allOf"] = [rule for n in networks for rule in token_of(n, nullable=False)] + _whole("amount", codes)
    update = schemas.get("UpdateProduct")
    if update is not None:
        # The same rules, for the fields a PATCH sends (the stored ones are not the document's
        # to know). A CRYPTO price's precision is left out: it depends on the token, which a
        # PATCH may leave as stored, and the rule per token multiplies the schema's branches
        # past what generators of test data can expand.
        update["allOf"] = [
            in_its_token(),
            {"if": priced_in("FIAT"), "then": in_cents()},
        ] + [rule for n in networks for rule in token_of(n, nullable=True)]
    product = schemas.get("CreateProduct")
    if product is not None:
        product["allOf"] = [
            {
                "if": priced_in("CRYPTO"),
                "then": {
                    "required": ["token", "network"],
                    "properties": {"token": {"type": "string"}, "network": {"type": "string"}},
                    "allOf": _precision(networks),
                },
                "else": in_cents(),
            },
            in_its_token(),
        ] + [rule for n in networks for rule in token_of(n, nullable=True)]


def _operation_ids(endpoints: list[str]) -> dict[str, str]:
    """Stable operation ids from the view names (``create_payment``), qualified by the
    blueprint only where two blueprints use the same name."""
    names = [endpoint.rsplit(".", 1)[-1] for endpoint in endpoints]
    return {e: (n if names.count(n) == 1 else e.replace(".", "_")) for e, n in zip(endpoints, names, strict=True)}


# <ref>, <int:n>: a path argument's name; found in the path's order (Flask's rule.arguments
# is a set, whose order changes with the process's hash seed)
PATH_ARGUMENT = re.compile(r"<(?:[^:>]+:)?([^>]+)>")
IDEMPOTENT = ("/payments", "/payments/{ref}/refunds")  # the creates that take an Idempotency-Key


def build(app: Flask, server_url: str, registry: Registry | None = None, codes: list[str] | None = None) -> dict:
    specs: list[tuple[str, str, list[str], EndpointSpec, str]] = []
    for rule in app.url_map.iter_rules():
        spec = getattr(app.view_functions[rule.endpoint], "endpoint_spec", None)
        if spec is None or not rule.rule.startswith("/v1/api"):
            continue
        path = re.sub(PATH_ARGUMENT, r"{\1}", rule.rule[len("/v1/api") :])
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            specs.append((path, method.lower(), PATH_ARGUMENT.findall(rule.rule), spec, rule.endpoint))
    operation_ids = _operation_ids(sorted({s[4] for s in specs}))
    models = {m.__name__: m for *_, spec, _ in specs for m in _models(spec)}
    models["PageMeta"] = PageMeta
    _, defs = models_json_schema([(m, "validation") for m in models.values()], ref_template=REF)
    schemas = defs.get("$defs", {})
    networks = list(registry or [])
    codes = codes or [currencies.DEFAULT]
    _registry_values(
        schemas,
        {
            "networks": [n.name for n in networks],
            "tokens": sorted({t.symbol for n in networks for t in n.tokens}),
            "currencies": codes,
        },
    )
    _no_nul(schemas)
    _cross_field_rules(schemas, networks, codes)
    schemas["Error"] = ERROR_SCHEMA

    paths: dict[str, dict] = {}
    for path, method, args, spec, view in specs:
        op: dict[str, Any] = {"summary": spec.summary, "tags": [spec.tag], "operationId": operation_ids[view]}
        params = [
            {"name": a, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}} for a in args
        ]
        params += _query_params(spec.query, schemas)
        if method == "post" and path in IDEMPOTENT:
            params.append(
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
                }
            )
        if params:
            op["parameters"] = params
        if spec.body is not None:
            media: dict[str, Any] = {"schema": _ref(spec.body)}
            extra = spec.body.model_config.get("json_schema_extra")
            examples = extra.get("examples") if isinstance(extra, dict) else None
            if isinstance(examples, list) and examples:  # what "Try it out" sends: a request that succeeds
                media["example"] = examples[0]
            op["requestBody"] = {"required": spec.body_required, "content": {"application/json": media}}
        responses: dict[str, Any] = {
            str(spec.status): {"description": "Success", "content": {"application/json": {"schema": _success(spec)}}}
        }
        statuses = (
            set(spec.errors)
            | ({400, 401, 403, 429} if spec.scope else set())
            | ({400} if spec.body or spec.query else set())
            | ({413} if spec.body else set())  # the body is read only where there is one
            | {414}  # any URL (errors.MAX_URL)
        )
        for code in sorted(statuses):
            responses[str(code)] = {
                "description": ERROR_TEXT.get(code, "Error"),
                "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}},
            }
        responses["default"] = {
            "description": "Error",
            "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}},
        }
        op["responses"] = responses
        if spec.scope:
            op["security"] = [{"ApiKey": []}]
            op["description"] = f"Scope: `{spec.scope}`."
        paths.setdefault(path, {})[method] = op

    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Kassa API",
            "version": "1.0.0",
            "description": "Self-hosted, non-custodial crypto payments. Every request but /networks needs "
            "an X-Api-Key header; every error has the same JSON shape (see Error).",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
        },
    }
