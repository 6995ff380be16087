"""Unauthenticated routes: networks, the OpenAPI document and its docs page, health."""
from __future__ import annotations

from flask import Blueprint, current_app, send_from_directory, url_for
from swagger_ui_bundle import swagger_ui_path

from kassa_api import openapi
from kassa_api.deps import db, deps
from kassa_api.endpoint import endpoint
from kassa_api.schemas import NetworkOut

bp = Blueprint("meta", __name__)
DOCS_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kassa API reference</title><link rel="stylesheet" href="{css}"></head>
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
        cache["doc"] = openapi.build(current_app, deps().settings.public_api_url, deps().settings.networks)
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
    return html, 200, {"Content-Type": "text/html; charset=utf-8"}


@bp.get("/v1/api/docs/init.js")
def docs_init():
    return send_from_directory(current_app.static_folder + "/docs", "init.js")


@bp.get("/v1/api/docs/assets/<path:name>")
def docs_assets(name: str):
    return send_from_directory(swagger_ui_path, name, max_age=86400)


@bp.get("/healthz")
def healthz():
    return {"status": "ok"}


@bp.get("/readyz")
def readyz():
    try:
        db().connection().exec_driver_sql("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - readiness reports any failure
        return {"status": "unavailable", "database": str(exc).splitlines()[0]}, 503
    return {"status": "ok", "database": "ok"}
