"""The public pages' one blueprint (``pages``): the hosted checkout (``checkout``), the product
page (``products``) and a refund's claim page (``refunds``) add their views to it. Every POST
is CSRF-checked, query strings are guarded, and an HTTP error is an HTML page."""

from __future__ import annotations

from flask import Blueprint
from werkzeug.exceptions import HTTPException

from kassa_api import csrf, query
from kassa_api.web import http_error_page

bp = Blueprint("pages", __name__)
bp.before_request(query.guard)
csrf.protect(bp)
bp.register_error_handler(HTTPException, http_error_page)
