"""The Flask application factory."""

from __future__ import annotations

import logging
import uuid

from flask import Flask, g, request
from flask.sessions import SecureCookieSessionInterface
from werkzeug.middleware.proxy_fix import ProxyFix

from kassa_common.accounts.logins import make_store
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.pricing import currencies
from kassa_common.pricing.amounts import plain
from kassa_common.pricing.service import make_rates
from kassa_common.urls import without_password
from kassa_api import deps as deps_module
from kassa_api import errors, words
from kassa_api.ratelimit import make_limiter
from kassa_api.routes.dashboard import forms
from kassa_api.routes.dashboard.accounts import LOGIN_FAILURES, LOGIN_WINDOW_SECONDS

MAX_BODY = 64 * 1024
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "X-Frame-Options": "DENY",
}


class CookieSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, without building the cookie's signer for a request
    that carries no session cookie (every API request): an empty session, as Flask gives."""

    def open_session(self, app: Flask, request):
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)


def create_app(settings: Settings | None = None, *, engine=None) -> Flask:
    settings = settings or Settings.from_env()
    settings.check_web()  # the web refuses to start on the development secret outside development
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=MAX_BODY, SECRET_KEY=settings.secret_key, JSON_SORT_KEYS=False)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.url_map.strict_slashes = False
    app.session_interface = CookieSessions()
    logging.basicConfig(level=settings.log_level)
    engine = engine or make_engine(
        settings.database_url, pool_size=settings.db_pool_size, application_name="kassa-api", pre_ping=False
    )  # a checkout is a request: see kassa_common.db
    read_engine = (
        make_engine(
            settings.read_database_url,
            pool_size=settings.db_pool_size,
            application_name="kassa-api-read",
            pre_ping=False,
        )
        if settings.database_read_url
        else None
    )  # the dashboard's lists and CSV export (kassa_api.deps.read_db)
    deps_module.init_app(
        app,
        deps_module.Deps(
            settings=settings,
            engine=engine,
            sessions=make_session_factory(engine),
            limiter=make_limiter(settings.redis_url, settings.rate_limit_per_minute),
            rates=make_rates(settings),
            public_limiter=make_limiter(settings.redis_url, settings.public_create_per_minute),
            login_failures=make_limiter(settings.redis_url, LOGIN_FAILURES, window=LOGIN_WINDOW_SECONDS),
            login_failures_by_address=make_limiter(
                settings.redis_url, settings.login_failures_per_address, window=LOGIN_WINDOW_SECONDS
            ),
            signups=make_limiter(settings.redis_url, settings.signups_per_hour, window=3600),
            logins=make_store(engine, settings.redis_url),
            read_sessions=make_session_factory(read_engine) if read_engine is not None else None,
        ),
    )
    if settings.trusted_proxies:  # the client address is the one the proxies saw (rate limits, throttling)
        hops = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]
    app.jinja_env.filters["without_password"] = without_password  # webhook URLs on the dashboard
    errors.init_app(app)
    app.jinja_env.filters.update(money=currencies.money, amount_text=currencies.amount_text, plain=plain)
    registry = settings.networks

    def network_label(name: str | None) -> str:
        """A network as people read it ("Base"), for every page and email."""
        network = registry.get(name) if name else None
        return network.label if network else (name or "")

    def explorer_url(name: str | None, tx_hash: str | None) -> str | None:
        network = registry.get(name) if name else None
        return network.explorer_url(tx_hash) if network else None

    app.jinja_env.filters["network_label"] = network_label
    app.jinja_env.filters["browser_name"] = words.browser_name
    app.jinja_env.globals["delivery_error"] = words.delivery_error
    app.jinja_env.globals["explorer_url"] = explorer_url
    app.jinja_env.globals.update(forms.TEMPLATE_GLOBALS)  # a dashboard form's errors and typed values
    _register_blueprints(app)

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

    return app


def _register_blueprints(app: Flask) -> None:
    from kassa_api.routes import deliveries, events, meta, payments, products, refund_payouts, refunds, webhooks

    for module in (payments, refunds, refund_payouts, products, webhooks, deliveries, events):
        app.register_blueprint(module.bp, url_prefix="/v1/api")
    app.register_blueprint(meta.bp)
    from kassa_api.routes import dashboard, pages

    app.register_blueprint(pages.bp)
    app.register_blueprint(dashboard.bp)
