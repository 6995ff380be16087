"""Who may do what in a store's dashboard (DESIGN §14): every dashboard route and method, and
the least role it needs in the open store.

- ``viewer`` reads: the overview, payments (and their CSV), refunds, products, webhooks,
  events, wallets, sweeps, the store's settings; and manages its own login (password,
  two-factor, its sessions), switches mode and store.
- ``employee`` also makes and cancels payments, and makes and edits products.
- ``manager`` also deletes products, refunds, manages webhooks and their deliveries, API keys,
  the store's settings and notifications, and sees the members; not wallets.
- ``owner``: everything, wallets and members' roles included, and the audit log.

``common.login_required`` checks it before any view runs, so a refused action answers 403
(the page says which role it needs) whether or not the object it names exists. A route with
no entry needs ``owner`` (closed by default), and ``tests/integration/web/test_dashboard_roles.py``
visits every route of the app with every role, so a new route without an entry fails there.
``PUBLIC`` marks the pages before signing in (no store is open there).
"""

from __future__ import annotations

from typing import Final

PUBLIC: Final = "public"
OWNER, MANAGER, EMPLOYEE, VIEWER = "owner", "manager", "employee", "viewer"

LEAST_ROLE: dict[tuple[str, str], str] = {
    # signing in and out, and the pages of emailed links: no store open yet
    ("accounts.signup", "GET"): PUBLIC,
    ("accounts.signup", "POST"): PUBLIC,
    ("accounts.login", "GET"): PUBLIC,
    ("accounts.login", "POST"): PUBLIC,
    ("accounts.login_code", "GET"): PUBLIC,
    ("accounts.login_code", "POST"): PUBLIC,
    ("accounts.forgot", "GET"): PUBLIC,
    ("accounts.forgot", "POST"): PUBLIC,
    ("accounts.reset_password", "GET"): PUBLIC,
    ("accounts.reset_password", "POST"): PUBLIC,
    ("accounts.logout", "POST"): PUBLIC,
    ("wallets.cancel_by_link", "GET"): PUBLIC,
    ("wallets.cancel_by_link", "POST"): PUBLIC,
    ("invitations.accept", "GET"): PUBLIC,
    ("invitations.accept", "POST"): PUBLIC,
    # the account's own: its session, its login, the store it has open
    ("accounts.home", "GET"): VIEWER,
    ("accounts.switch_mode", "POST"): VIEWER,
    ("stores.index", "GET"): VIEWER,
    ("stores.switch", "POST"): VIEWER,
    ("settings.change_password", "POST"): VIEWER,
    ("settings.two_factor", "GET"): VIEWER,
    ("settings.enable_two_factor", "POST"): VIEWER,
    ("settings.disable_two_factor", "POST"): VIEWER,
    ("settings.revoke_login", "POST"): VIEWER,
    # reading the store
    ("overview.index", "GET"): VIEWER,
    ("payments.index", "GET"): VIEWER,
    ("payments.detail", "GET"): VIEWER,
    ("payments.export", "GET"): VIEWER,
    ("refunds.index", "GET"): VIEWER,
    ("refunds.detail", "GET"): VIEWER,
    ("products.index", "GET"): VIEWER,
    ("products.edit", "GET"): VIEWER,
    ("webhooks.index", "GET"): VIEWER,
    ("webhooks.detail", "GET"): VIEWER,
    ("events.index", "GET"): VIEWER,
    ("events.detail", "GET"): VIEWER,
    ("wallets.index", "GET"): VIEWER,
    ("sweeps.index", "GET"): VIEWER,
    ("settings.index", "GET"): VIEWER,
    ("notifications.index", "GET"): VIEWER,
    ("accounts.onboarding", "GET"): VIEWER,
    # payments and products
    ("payments.cancel", "POST"): EMPLOYEE,
    ("products.index", "POST"): EMPLOYEE,
    ("products.edit", "POST"): EMPLOYEE,
    ("products.delete", "POST"): MANAGER,
    # refunds, webhooks, keys, the store's settings
    ("refunds.create", "POST"): MANAGER,
    ("refunds.cancel", "POST"): MANAGER,
    ("refunds.complete", "POST"): MANAGER,
    ("refunds.simulate", "POST"): MANAGER,
    ("webhooks.index", "POST"): MANAGER,
    ("webhooks.act", "POST"): MANAGER,
    ("webhooks.redeliver", "POST"): MANAGER,
    ("events.resend", "POST"): MANAGER,
    ("keys.index", "GET"): MANAGER,
    ("keys.index", "POST"): MANAGER,
    ("keys.revoke", "POST"): MANAGER,
    ("settings.index", "POST"): MANAGER,
    ("notifications.index", "POST"): MANAGER,
    ("accounts.onboarding", "POST"): MANAGER,
    ("members.index", "GET"): MANAGER,
    # where money goes, and who may open the store
    ("members.change_role", "POST"): OWNER,
    ("members.remove", "POST"): OWNER,
    ("members.two_factor", "POST"): OWNER,
    ("members.invite", "POST"): OWNER,
    ("members.revoke_invitation", "POST"): OWNER,
    ("wallets.index", "POST"): OWNER,
    ("wallets.cancel_pending", "POST"): OWNER,
    ("audit.index", "GET"): OWNER,
    ("audit.export", "GET"): OWNER,
}


def least_role(endpoint: str | None, method: str) -> str:
    """The least role ``endpoint`` (``dashboard.payments.index``) needs for ``method``;
    ``owner`` for a route the table does not name."""
    name = (endpoint or "").removeprefix("dashboard.")
    return LEAST_ROLE.get((name, "GET" if method == "HEAD" else method), OWNER)
