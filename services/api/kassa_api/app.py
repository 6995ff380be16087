"""The Flask application factory."""

from __future__ import annotations

from flask import Flask
from flask.sessions import SecureCookieSessionInterface
from werkzeug.middleware.proxy_fix import ProxyFix

from kassa_common.bootstrap import bootstrap, load_settings
from kassa_common.config import Settings
from kassa_api import deps, errors, wiring

MAX_BODY = 64 * 1024


class CookieSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, without building the cookie's signer for a request
    that carries no session cookie (every API request): an empty session, as Flask gives."""

    def open_session(self, app: Flask, request):
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)


def create_app(settings: Settings | None = None, *, engine=None) -> Flask:
    """The web process (API, checkout and product pages, dashboard) over the one bootstrap;
    ``engine``: a test's own. It refuses to start on the development secret outside development."""
    settings = settings or load_settings()
    settings.check_web()
    web = bootstrap(  # plain logs; /metrics is a route; a checkout is a request (kassa_common.db): no pre-ping
        settings, "api", pool_size=settings.db_pool_size, logs="plain", metrics=False, engine=engine, pre_ping=False
    )
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=MAX_BODY, SECRET_KEY=settings.web.secret_key, JSON_SORT_KEYS=False)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.url_map.strict_slashes = False
    app.session_interface = CookieSessions()
    deps.init_app(app, wiring.make_deps(web))
    if settings.web.trusted_proxies:  # the client address is the one the proxies saw (rate limits, throttling)
        hops = settings.web.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]
    errors.init_app(app)
    wiring.init_templates(app, settings.networks, emails_on=bool(settings.sender.smtp_url))
    _register_blueprints(app)
    wiring.init_hooks(app)
    return app


def _register_blueprints(app: Flask) -> None:
    from kassa_api.routes import deliveries, events, meta, payments, products, refund_payouts, refunds, webhooks

    for module in (payments, refunds, refund_payouts, products, webhooks, deliveries, events):
        app.register_blueprint(module.bp, url_prefix="/v1/api")
    app.register_blueprint(meta.bp)
    from kassa_api.routes import dashboard, pages

    app.register_blueprint(pages.bp)
    app.register_blueprint(dashboard.bp)
