"""The published API description, its docs page, /networks and the health endpoints."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import jsonschema
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from kassa_common.db import make_engine
from kassa_api.app import create_app
from tests.support.api import API

SPEC_ENDPOINTS = {  # SPEC.md section 4 with DESIGN.md section 3's additions
    ("post", "/payments"),
    ("get", "/payments/{ref}"),
    ("get", "/payments"),
    ("post", "/payments/{ref}/cancel"),
    ("post", "/products"),
    ("get", "/products"),
    ("get", "/products/{ref}"),
    ("patch", "/products/{ref}"),
    ("delete", "/products/{ref}"),
    ("post", "/webhooks"),
    ("get", "/webhooks"),
    ("get", "/webhooks/{ref}"),
    ("patch", "/webhooks/{ref}"),
    ("delete", "/webhooks/{ref}"),
    ("post", "/webhooks/{ref}/rotate-secret"),
    ("get", "/networks"),
}
SCOPES = {
    "/payments": {"post": "payments:create", "get": "payments:read"},
    "/products": "products:manage",
    "/webhooks": "webhooks:manage",
}


@pytest.fixture(scope="module")
def document(app):
    r = app.test_client().get(f"{API}/openapi.json")
    assert r.status_code == 200 and r.mimetype == "application/json"
    return r.json


def operations(document):
    return {(method, path): op for path, ops in document["paths"].items() for method, op in ops.items()}


def test_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    jsonschema.Draft202012Validator(OPENAPI_31).validate(document)
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_document_lists_every_endpoint(document):
    assert SPEC_ENDPOINTS <= set(operations(document))


def test_operation_ids_are_unique_and_plain(document):
    ids = [op["operationId"] for op in operations(document).values()]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids)


def test_server_url_is_the_public_api_url(document, settings):
    assert document["servers"] == [{"url": settings.public_api_url}]


@pytest.mark.parametrize("method, path", sorted(SPEC_ENDPOINTS - {("get", "/networks")}))
def test_each_endpoint_needs_the_api_key_and_names_its_scope(document, method, path):
    op = operations(document)[(method, path)]
    assert op["security"] == [{"ApiKey": []}]
    base = "/" + path.split("/")[1]
    scope = SCOPES[base] if isinstance(SCOPES[base], str) else SCOPES[base][method]
    if base == "/payments" and path.endswith("/cancel"):
        scope = "payments:create"
    elif base == "/payments" and "{ref}" in path:
        scope = "payments:read"
    assert scope in op["description"]
    assert {"401", "403", "429", "default"} <= set(op["responses"])


def test_api_key_security_scheme_is_the_header(document):
    assert document["components"]["securitySchemes"]["ApiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Api-Key",
    }


def test_networks_needs_no_key(document):
    assert "security" not in operations(document)[("get", "/networks")]


def test_success_statuses_match_the_spec(document):
    ops = operations(document)
    assert "201" in ops[("post", "/payments")]["responses"] and "201" in ops[("post", "/products")]["responses"]
    for key in [
        ("get", "/payments"),
        ("post", "/payments/{ref}/cancel"),
        ("patch", "/products/{ref}"),
        ("delete", "/products/{ref}"),
    ]:
        assert "200" in ops[key]["responses"]


def test_error_schema_is_the_envelope(document):
    error = document["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"success", "statusCode", "error"}
    assert set(error["properties"]["error"]["required"]) == {"code", "message", "status", "details"}


def test_create_payment_body_documents_the_rules(document, settings):
    body = document["components"]["schemas"]["CreatePayment"]
    assert set(body["required"]) == {"token", "network"} and body["additionalProperties"] is False
    amount = next(b for b in body["properties"]["amount"]["anyOf"] if b.get("type") == "number")
    assert amount["minimum"] == 0.01 and amount["multipleOf"] == 0.01
    assert "minor units" in amount["description"]  # 0 places for JPY
    currency = next(b for b in body["properties"]["currency"]["anyOf"] if b.get("type") == "string")
    assert currency["pattern"] == "^[A-Za-z]{3}$" and currency["default"] == "USD"
    assert set(body["properties"]["network"]["enum"]) == {n.name for n in settings.networks}
    assert {"USDC", "USDT", "ETH", "BTC"} <= set(body["properties"]["token"]["enum"])
    assert body["oneOf"] == [
        {"required": ["amount"], "properties": {"amount": {"type": "number"}}},
        {"required": ["product_id"], "properties": {"product_id": {"type": "string"}}},
    ]
    base = next(rule for rule in body["allOf"] if rule["if"]["properties"]["network"]["const"] == "BASE")
    assert base["then"]["properties"]["token"]["enum"] == sorted(t.symbol for t in settings.networks.get("BASE").tokens)


def test_create_product_body_documents_crypto_and_fiat(document):
    body = document["components"]["schemas"]["CreateProduct"]
    kind = body["allOf"][0]
    assert kind["if"]["properties"]["currency_type"]["const"] == "CRYPTO"
    assert kind["then"]["required"] == ["token", "network"]
    assert kind["else"]["properties"]["price"]["multipleOf"] == 0.01
    assert kind["else"]["properties"]["token"] == {"type": "null"}


def test_strings_say_they_refuse_nul_and_updates_refuse_null(document):
    schemas = document["components"]["schemas"]
    assert schemas["CreateProduct"]["properties"]["name"]["not"] == {"pattern": "\x00"}
    assert schemas["UpdateProduct"]["properties"]["name"]["type"] == "string"  # not nullable
    assert schemas["UpdateWebhook"]["properties"]["url"]["type"] == "string"


def test_list_payments_query_parameters(document):
    params = {p["name"]: p for p in operations(document)[("get", "/payments")]["parameters"]}
    assert set(params) == {"page", "pageSize", "status", "search"}
    assert params["pageSize"]["schema"]["maximum"] == 100 and params["page"]["schema"]["minimum"] == 1
    assert set(params["status"]["schema"]["enum"]) == {"PENDING", "COMPLETED", "PARTIALLY_PAID", "EXPIRED", "CANCELED"}


# ---- docs page ----------------------------------------------------------------------------


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.urls.append(("script", a.get("src") or ""))
        elif tag == "link" and a.get("href"):
            self.urls.append(("link", a["href"]))
        elif tag in ("img", "iframe") and a.get("src"):
            self.urls.append((tag, a["src"]))


@pytest.mark.parametrize("page", [f"{API}/docs", f"{API}/docs/"])
def test_docs_page_loads_only_same_origin_assets(client, page):
    r = client.get(page)
    assert r.status_code == 200 and r.mimetype == "text/html"
    parser = _Assets()
    parser.feed(r.get_data(as_text=True))
    scripts = [u for kind, u in parser.urls if kind == "script"]
    assert scripts and all(scripts), "every script is a file, none inline"
    assert any(kind == "link" for kind, _ in parser.urls)
    base = "http://localhost" + page
    for kind, url in parser.urls:
        if url.startswith("data:"):  # inline (the empty favicon): nothing is fetched
            continue
        absolute = urljoin(base, url)
        assert urlsplit(absolute).netloc == "localhost", f"{url} is not same-origin"
        asset = client.get(urlsplit(absolute).path)
        assert asset.status_code == 200 and asset.get_data(), f"{url} does not load"
        expected = "javascript" if kind == "script" else "css"
        assert expected in asset.mimetype, (url, asset.mimetype)
    spec = re.search(r'data-spec-url="([^"]+)"', r.get_data(as_text=True)).group(1)
    assert client.get(urlsplit(urljoin(base, spec)).path).json["openapi"].startswith("3.1")


# ---- networks -----------------------------------------------------------------------------


def test_networks_lists_enabled_networks_without_a_key(client):
    r = client.get(f"{API}/networks")
    assert r.status_code == 200 and r.json["success"] is True
    networks = {n["name"]: n for n in r.json["data"]}
    assert {"ETHEREUM", "BASE", "POLYGON", "ARBITRUM", "OPTIMISM", "BSC", "BITCOIN", "LOCAL_EVM"} <= set(networks)
    for n in networks.values():
        assert {"name", "kind", "chain_id", "required_confirmations", "tokens"} <= set(n)
        assert n["kind"] in ("evm", "bitcoin") and n["required_confirmations"] >= 1 and n["tokens"]
        for t in n["tokens"]:
            assert set(t) == {"symbol", "contract", "decimals", "native"}
            assert (t["contract"] is None) == t["native"]


def test_local_evm_is_the_dev_chain_with_usdc_and_usdt(client):
    local = next(n for n in client.get(f"{API}/networks").json["data"] if n["name"] == "LOCAL_EVM")
    assert local["chain_id"] == 31337 and local["kind"] == "evm" and local["live_enabled"] is True
    tokens = {t["symbol"]: t for t in local["tokens"]}
    assert tokens["USDC"]["decimals"] == tokens["USDT"]["decimals"] == 6
    assert tokens["ETH"]["native"] is True


def test_networks_never_show_rpc_urls(client):
    assert "8545" not in client.get(f"{API}/networks").get_data(as_text=True)


def test_network_pairs_listed_are_the_ones_payments_accept(client, merchant):
    networks = client.get(f"{API}/networks").json["data"]
    for n in networks:
        for t in n["tokens"][:1]:
            r = client.post(
                f"{API}/payments",
                json={"amount": 1, "token": t["symbol"], "network": n["name"]},
                headers=merchant.headers(),
            )
            assert r.status_code == 201, (n["name"], t["symbol"], r.json)


# ---- health -------------------------------------------------------------------------------


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json == {"status": "ok"}


def test_readyz_checks_the_database(client):
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json == {"status": "ok"}  # ready, and nothing more to anyone


def test_readyz_details_need_the_metrics_token(settings, engine):
    token = "readyz-" + "t" * 24
    client = create_app(settings.with_(web={"metrics_token": token}), engine=engine).test_client()
    for headers in ({}, {"Authorization": "Bearer not-it"}, {"Authorization": token}):
        r = client.get("/readyz", headers=headers)
        assert r.status_code == 200 and r.json == {"status": "ok"}
    r = client.get("/readyz", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json["status"] == "ok" and r.json["database"] == "ok"
    assert "dead_letters" in r.json or "bus" in r.json


def test_readyz_is_503_when_the_database_is_unreachable(settings):
    url = "postgresql://kassa_reader@127.0.0.1:1/nowhere"
    token = "readyz-" + "t" * 24
    engine = make_engine(url, pool_size=1)
    try:
        client = create_app(settings.with_(database_url=url, web={"metrics_token": token}), engine=engine).test_client()
        r = client.get("/readyz")
        detailed = client.get("/readyz", headers={"Authorization": f"Bearer {token}"})
    finally:
        engine.dispose()
    assert r.status_code == 503 and r.json == {"status": "unavailable"}  # no host, port or user to anyone
    assert "127.0.0.1" not in r.get_data(as_text=True) and "kassa_reader" not in r.get_data(as_text=True)
    assert detailed.status_code == 503 and detailed.json["status"] == "unavailable"
    assert "127.0.0.1" in detailed.json["database"]  # the operator's token shows why
    assert "password" not in detailed.get_data(as_text=True)


def test_the_docs_renderer_is_the_pinned_npm_swagger_ui():
    """The committed Swagger UI files are those of package.json's swagger-ui-dist (refresh with
    ``python -m kassa_dev.docs_assets``)."""
    from kassa_dev import docs_assets
    from kassa_dev.chain.paths import find_repo_root

    assert docs_assets.differences(find_repo_root()) == []
    pinned = json.loads((find_repo_root() / "package.json").read_text())["devDependencies"]["swagger-ui-dist"]
    assert int(pinned.split(".")[0]) >= 5, "Swagger UI reads OpenAPI 3.1 from version 5 on"


def test_every_request_body_has_an_example_that_try_it_out_can_send(document, client, merchant):
    """What the reference's "Try it out" sends is each body's example: sent as is, with a
    test key, every one succeeds (a PATCH on an object its own create made)."""
    made: dict[str, str] = {}
    order = sorted(
        ((path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()),
        key=lambda item: item[1] != "post",  # creates first: the updates need their objects
    )
    sent = 0
    for path, method, op in order:
        if "requestBody" not in op:
            continue
        example = op["requestBody"]["content"]["application/json"].get("example")
        assert example is not None, f"{method.upper()} {path} has no example"
        if "{ref}" in path and path.count("/") != 2:
            continue  # an action on an object (e.g. a refund of a payment): its own tests send it
        url = API + path.replace("{ref}", made.get(path.split("/")[1], "missing"))
        r = client.open(url, method=method.upper(), json=example, headers=merchant.headers("test"))
        assert r.status_code in (200, 201), f"{method.upper()} {path}: {r.get_data(as_text=True)}"
        made.setdefault(path.split("/")[1], r.get_json()["data"]["id"])
        sent += 1
    assert sent >= 5
