"""Unauthenticated routes: `/` (to the dashboard), networks, the OpenAPI document and its docs
page, health."""

from __future__ import annotations

import hmac
import logging
import time

from flask import Blueprint, current_app, make_response, redirect, request, send_from_directory, url_for
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from kassa_common.messaging import admin, topology
from kassa_common.pricing import currencies
from kassa_api import openapi
from kassa_api.deps import db, deps
from kassa_api.endpoint import endpoint
from kassa_api.schemas import NetworkOut
from kassa_api.web import secure

bp = Blueprint("meta", __name__)
log = logging.getLogger(__name__)
DOCS_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kassa API reference</title><link rel="icon" href="data:,"><link rel="stylesheet" href="{css}"></head>
<body data-spec-url="{spec}"><div id="swagger-ui"></div>
<script src="{bundle}"></script><script src="{init}"></script></body></html>"""


@bp.get("/v1/api/networks")
@endpoint("List enabled networks and their tokens", scope=None, tag="networks", response=list[NetworkOut])
def networks():
    return [n.to_public() for n in deps().settings.networks]


@bp.get("/v1/api/openapi.json")
def openapi_document():
    cache = current_app.extensions.setdefault("kassa_openapi", {})
    if "doc" not in cache:
        cache["doc"] = openapi.build(
            current_app,
            deps().settings.public_api_url,
            deps().settings.networks,
            currencies.priced(deps().settings.rates.fixed_rates),
        )
    return cache["doc"]


@bp.get("/v1/api/docs")
def docs_page():
    # Root-relative URLs: they resolve the same from /docs and /docs/ (and under a SCRIPT_NAME).
    html = DOCS_HTML.format(
        css=url_for("meta.docs_assets", name="swagger-ui.css"),
        bundle=url_for("meta.docs_assets", name="swagger-ui-bundle.js"),
        init=url_for("meta.docs_init"),
        spec=url_for("meta.openapi_document"),
    )
    return secure(make_response(html, 200, {"Content-Type": "text/html; charset=utf-8"}))


@bp.get("/v1/api/docs/init.js")
def docs_init():
    return send_from_directory(current_app.static_folder + "/docs", "init.js")


@bp.get("/v1/api/docs/assets/<path:name>")
def docs_assets(name: str):
    """Swagger UI 5 (reads OpenAPI 3.1), vendored from npm by ``python -m kassa_dev.docs_assets``."""
    assert current_app.static_folder is not None  # the app's static/ folder
    return send_from_directory(current_app.static_folder + "/docs/swagger-ui", name, max_age=86400)


@bp.get("/")
def root():
    """The front door of a Kassa server is the merchant dashboard (it asks for a login)."""
    return redirect(url_for("dashboard.accounts.home"), 302)


@bp.get("/favicon.ico")
def favicon():
    """The icon browsers ask every site for (pages name ``static/favicon.svg`` too)."""
    assert current_app.static_folder is not None  # the app's static/ folder
    return send_from_directory(current_app.static_folder, "favicon.svg", mimetype="image/svg+xml", max_age=86400)


@bp.get("/healthz")
def healthz():
    return {"status": "ok"}


BUS_STATUS_TTL = 5.0  # seconds a look at the broker is reused (readiness probes come often)


def bus_status() -> tuple[list[admin.QueueDepth] | None, str | None]:
    """The queues' depths (or why the broker could not be asked), looked up at most every
    ``BUS_STATUS_TTL`` seconds per process."""
    cache = current_app.extensions.get("kassa_bus_status")
    if cache is None or time.monotonic() - cache[0] > BUS_STATUS_TTL:
        settings = deps().settings
        try:
            cache = (
                time.monotonic(),
                admin.queue_depths(settings.rabbitmq_url, topology.named(settings.bus_prefix)),
                None,
            )
        except Exception as exc:  # noqa: BLE001 - readiness reports any failure
            cache = (time.monotonic(), None, f"unreachable: {exc!r}"[:200])
        current_app.extensions["kassa_bus_status"] = cache
    return cache[1], cache[2]


def _operator() -> bool:
    """Whether the request bears ``METRICS_TOKEN`` (``Authorization: Bearer <token>``); never
    true while the setting is unset."""
    token = deps().settings.web.metrics_token
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@bp.get("/readyz")
def readyz():
    """503 without the database (the web cannot serve); 200 otherwise, "degraded" while the
    broker is unreachable (the outbox keeps events) or a dead-letter queue holds messages.

    To anyone, only ``{"status": "ok"}`` or ``{"status": "unavailable"}`` (ready or not): why
    (the database's error names its host and user, the queues' names and depths) is the
    operator's, shown to a request bearing METRICS_TOKEN as ``/metrics`` asks."""
    try:
        db().connection().exec_driver_sql("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - readiness reports any failure
        reason = str(exc).splitlines()[0]
        log.warning("not ready: the database: %s", reason)
        return {"status": "unavailable", **({"database": reason} if _operator() else {})}, 503
    if not _operator():
        return {"status": "ok"}
    depths, error = bus_status()
    if depths is None:
        return {"status": "degraded", "database": "ok", "bus": error}
    dead = {d.name: d.messages for d in depths if d.role == "dlq"}
    return {"status": "degraded" if any(dead.values()) else "ok", "database": "ok", "bus": "ok", "dead_letters": dead}


class _BusCollector:
    def collect(self):
        depths, _error = bus_status()
        up = GaugeMetricFamily("kassa_bus_up", "1 when the broker answered the last look at the queues")
        up.add_metric([], 0 if depths is None else 1)
        yield up
        messages = GaugeMetricFamily(
            "kassa_bus_queue_messages",
            "Messages waiting in each queue (role: work, retry or dlq; a dlq above 0 needs an operator)",
            labels=["queue", "role"],
        )
        consumers = GaugeMetricFamily("kassa_bus_queue_consumers", "Consumers of each queue", labels=["queue", "role"])
        for d in depths or ():
            messages.add_metric([d.name, d.role], d.messages)
            consumers.add_metric([d.name, d.role], d.consumers)
        yield messages
        yield consumers


@bp.get("/metrics")
def metrics():
    """Prometheus text: the bus queues' depths (dead-letter queues included) and consumers.

    With METRICS_TOKEN set, only a request bearing it (``Authorization: Bearer <token>``)
    reads them; anyone else gets 401 (keep the port private otherwise)."""
    if deps().settings.web.metrics_token and not _operator():
        return (
            "metrics need the bearer token (METRICS_TOKEN)\n",
            401,
            {"WWW-Authenticate": 'Bearer realm="metrics"', "Content-Type": "text/plain; charset=utf-8"},
        )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_BusCollector())
    return generate_latest(registry), 200, {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
