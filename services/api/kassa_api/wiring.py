"""What ``create_app`` attaches to the Flask app: the request's dependencies (``Deps``) over
the process's bootstrap, the template filters every page uses, and the hooks that give each
response its request id, rate-limit and security headers.
"""

from __future__ import annotations

import uuid

from flask import Flask, g, request

from kassa_common.accounts.logins import make_store
from kassa_common.bootstrap import process_engine
from kassa_common.chains.networks import Registry
from kassa_common.db import make_session_factory
from kassa_common.pricing import currencies
from kassa_common.pricing.amounts import plain
from kassa_common.pricing.service import make_rates
from kassa_common.urls import without_password
from kassa_common.worker import Worker
from kassa_api import deps, words
from kassa_api.ratelimit import make_limiter
from kassa_api.routes.dashboard import forms
from kassa_api.routes.dashboard.accounts import LOGIN_FAILURES, LOGIN_WINDOW_SECONDS

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "X-Frame-Options": "DENY",
}


def make_deps(web: Worker) -> deps.Deps:
    """The web's dependencies: the bootstrap's engine and sessions, the rate limiters, the
    rates, the login store, and the dashboard's read sessions on DATABASE_READ_URL if set."""
    settings, redis_url = web.settings, web.settings.redis_url
    read_engine = (
        process_engine(
            settings, "api-read", pool_size=settings.db_pool_size, pre_ping=False, url=settings.read_database_url
        )
        if settings.database_read_url
        else None
    )  # the dashboard's lists and CSV export (kassa_api.deps.read_db)
    return deps.Deps(
        settings=settings,
        engine=web.engine,
        sessions=web.sessions,
        limiter=make_limiter(redis_url, settings.web.rate_limit_per_minute),
        rates=make_rates(settings),
        public_limiter=make_limiter(redis_url, settings.web.public_create_per_minute),
        login_failures=make_limiter(redis_url, LOGIN_FAILURES, window=LOGIN_WINDOW_SECONDS),
        login_failures_by_address=make_limiter(
            redis_url, settings.web.login_failures_per_address, window=LOGIN_WINDOW_SECONDS
        ),
        signups=make_limiter(redis_url, settings.web.signups_per_hour, window=3600),
        logins=make_store(web.engine, redis_url),
        read_sessions=make_session_factory(read_engine) if read_engine is not None else None,
    )


def init_templates(app: Flask, registry: Registry, *, emails_on: bool = False) -> None:
    """The filters and globals of every page and email: money, networks, explorers, forms,
    and ``emails_on`` (SMTP_URL is set): a page says an email was sent only when one can be."""

    def network_label(name: str | None) -> str:
        """A network as people read it ("Base"), for every page and email."""
        network = registry.get(name) if name else None
        return network.label if network else (name or "")

    def explorer_url(name: str | None, tx_hash: str | None) -> str | None:
        network = registry.get(name) if name else None
        return network.explorer_url(tx_hash) if network else None

    app.jinja_env.filters["without_password"] = without_password  # webhook URLs on the dashboard
    app.jinja_env.filters.update(money=currencies.money, amount_text=currencies.amount_text, plain=plain)
    app.jinja_env.filters["network_label"] = network_label
    app.jinja_env.filters["browser_name"] = words.browser_name
    app.jinja_env.globals["delivery_error"] = words.delivery_error
    app.jinja_env.globals["explorer_url"] = explorer_url
    app.jinja_env.globals["emails_on"] = emails_on
    app.jinja_env.globals.update(forms.TEMPLATE_GLOBALS)  # a dashboard form's errors and typed values


def init_hooks(app: Flask) -> None:
    """Each request's id (``X-Request-Id``, taken from the request or made), and each
    response's rate-limit and security headers."""

    @app.before_request
    def _request_id() -> None:
        # from the WSGI environ: a header missing from ``request.headers`` costs an exception
        g.request_id = request.environ.get("HTTP_X_REQUEST_ID", "")[:64] or uuid.uuid4().hex

    @app.after_request
    def _headers(response):
        response.headers["X-Request-Id"] = g.get("request_id", "")
        verdict = g.get("rate_limit")
        if verdict is not None:
            response.headers["X-RateLimit-Limit"] = str(verdict.limit)
            response.headers["X-RateLimit-Remaining"] = str(verdict.remaining)
            response.headers["X-RateLimit-Reset"] = str(verdict.reset_in)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response
