"""What every dashboard view shares: the signed-in account and the store it has open (the
merchant every view acts on), the owner it acts as, page rendering, guards that turn a
missing object into the 404 page (flaskr's ``get_post``), and the step-up check (the
password or a code asked again behind a login).

Resource modules import this one and it imports none of them (it names their endpoints
as strings), so the dashboard's imports form a tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import wraps

from flask import abort, g, redirect, request, session, url_for
from sqlalchemy.orm import Session

from kassa_common.accounts import merchants, stores, twofactor
from kassa_common.errors import NotFound
from kassa_common.models import Account, Merchant, Payment, Product, WebhookEndpoint
from kassa_common.owner import Owner, owned
from kassa_common.payments import find_payment
from kassa_api.deps import db, deps, make_owner
from kassa_api.ratelimit import wait_text
from kassa_api.routes.dashboard import roles
from kassa_api.web import page

LOGIN, ONBOARDING = "dashboard.accounts.login", "dashboard.accounts.onboarding"
ENROL_ENDPOINTS = (  # what an account that must turn two-factor on may still open (another store, too)
    "dashboard.settings.two_factor",
    "dashboard.settings.enable_two_factor",
    "dashboard.accounts.logout",
    "dashboard.stores.index",
    "dashboard.stores.switch",
)
LIST_SIZE = 50
NO_PAYMENT = "No such payment in this mode."
NO_PRODUCT = "No such product in this mode."
NO_WEBHOOK = "No such webhook in this mode."
NO_DELIVERY = "No such delivery."
THROTTLED, WRONG_PASSWORD, WRONG_CODE = "throttled", "password", "code"  # what step_up answers


def login_required(view):
    """Run ``view`` for a signed-in account in the store it has open: ``g.account`` (who),
    ``g.merchant`` (the store every view acts on), ``g.role`` (the account's role in it),
    ``g.stores`` (every store it can open, for the switcher), mode in ``g.test_mode``.

    The open store is the one the session names (``POST /dashboard/stores/<id>/switch``)
    while the account can still open it, else the first it owns. Anyone without a store to
    open goes to the login page; a role below the route's (``roles.least_role``) gets the
    403 page saying which it needs; a store without a business name goes to onboarding
    first, since checkout shows that name to customers.
    """

    @wraps(view)
    def wrapped(*args, **kwargs):
        token = session.get("sid")
        login = deps().logins.get(token) if isinstance(token, str) else None
        account = db().get(Account, login.account_id) if login is not None else None
        opened = open_store(account) if account is not None else None
        if account is None or opened is None:
            session.pop("sid", None)
            return redirect(url_for(LOGIN), 303)
        g.account, g.login, g.merchant, g.role = account, login, opened[0], opened[1]
        required = deps().settings.web.require_2fa or g.merchant.require_2fa  # the server's or the store's
        if required and account.totp_enabled_at is None and request.endpoint not in ENROL_ENDPOINTS:
            return redirect(url_for(ENROL_ENDPOINTS[0]), 303)  # enrol before anything else
        g.test_mode = session.get("mode", "test") == "test"
        needed = roles.least_role(request.endpoint, request.method)
        if not stores.at_least(g.role, needed):
            return render("refused.html", 403, needed=needed)
        if not g.merchant.business_name and request.endpoint != ONBOARDING:
            return redirect(url_for(ONBOARDING), 303)
        return view(*args, **kwargs)

    return wrapped


def open_store(account: Account) -> tuple[Merchant, str] | None:
    """The store ``account`` has open and its role there (``g.stores``: all it can open)."""
    g.stores = stores.stores_of(db(), account.id)
    if not g.stores:
        return None
    chosen = session.get("store")
    current = next((s for s in g.stores if str(s.id) == chosen), g.stores[0])
    merchant = db().get(Merchant, current.id)
    return (merchant, current.role) if merchant is not None else None


def current_owner() -> Owner:
    """Whom the dashboard acts for: the open store, in the mode it is switched to."""
    return make_owner(g.merchant.id, g.test_mode, g.merchant.payment_lifetime_minutes)


def render(template: str, status: int = 200, /, **context):
    """A dashboard page, with the store, the stores to switch to and the mode its header shows.

    ``status`` is positional-only so that a page may have a ``status`` variable of its own.
    """
    return page(
        f"dashboard/{template}",
        status,
        merchant=g.get("merchant"),
        account=g.get("account"),
        stores=g.get("stores", []),
        role=g.get("role"),
        can=can,
        test_mode=g.get("test_mode", True),
        **context,
    )


def can(endpoint: str, method: str = "GET") -> bool:
    """Whether the open store's role lets the account use ``endpoint`` (pages hide what it cannot)."""
    return stores.at_least(g.get("role"), roles.least_role(endpoint, method))


def unconfirmed(question: str, consequence: str, button: str, back: str):
    """A destructive action asks first: None once its form says ``confirm=yes``, otherwise
    the page asking, whose button posts the same form again with ``confirm=yes`` (no
    JavaScript needed)."""
    if request.form.get("confirm") == "yes":
        return None
    return render(
        "confirm.html", question=question, consequence=consequence, button=button, action=request.path, back=back
    )


@contextmanager
def not_found_as_404(description: str | None = None) -> Iterator[None]:
    """Turn a handler's NotFound into the 404 page saying ``description`` (else just "Not found")."""
    try:
        yield
    except NotFound:
        abort(404, description=description)


def get_payment_or_404(ref: str) -> Payment:
    """The payment (by id or short id) of this merchant and mode, or the 404 page."""
    with not_found_as_404(NO_PAYMENT):
        return find_payment(db(), current_owner(), ref)


def get_product_or_404(ref: str) -> Product:
    """The live product of this merchant and mode, or the 404 page: never confirm another's exists."""
    with not_found_as_404(NO_PRODUCT):
        return owned(db(), Product, ref, current_owner(), what="product")


def get_webhook_or_404(ref: str) -> WebhookEndpoint:
    """The live webhook endpoint of this merchant and mode, or the 404 page."""
    with not_found_as_404(NO_WEBHOOK):
        return owned(db(), WebhookEndpoint, ref, current_owner(), what="webhook")


def step_up(s: Session, password: str, code: str | None = None) -> str | None:
    """Check the signed-in account's password (and ``code``, a current code of its
    authenticator, when given) asked again before a sensitive change: None when right,
    else ``WRONG_PASSWORD``, ``WRONG_CODE`` or ``THROTTLED``.

    Throttled like the login (DESIGN §10): failures count per account (``LOGIN_FAILURES``
    per window) and per client address with the login's failures (``LOGIN_FAILURES_PER_ADDRESS``),
    so a stolen session cannot guess the password, then the code, as fast as argon2 runs.
    Past either limit nothing is checked (no argon2, no code) until the window ends; the
    code is not tried (nor used up) without the right password.
    """
    key, address_key = f"step-up:{g.account.id}", f"login-address:{request.remote_addr}"
    failures, by_address = deps().login_failures, deps().login_failures_by_address
    if failures.exceeded(key) or by_address.exceeded(address_key):
        return THROTTLED
    if not merchants.check_password(g.account.password_hash, password[:1000]):
        wrong = WRONG_PASSWORD
    elif code is not None and not twofactor.check_code(s, g.account, code[:20]):
        wrong = WRONG_CODE
    else:
        failures.clear(key)
        return None
    failures.hit(key)
    by_address.hit(address_key)
    return wrong


def step_up_wait() -> str:
    """What a throttled step-up says (both counters share the login's window)."""
    return f"Too many wrong attempts. Try again in {wait_text(deps().login_failures)}."
