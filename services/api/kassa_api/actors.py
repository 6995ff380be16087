"""Who is asking, for the audit log (``kassa_common.audit``): built here, in the web layer,
from the request, and passed explicitly to the domain operations that record it.

The client address is ``request.remote_addr``: the one the app computes everywhere (rate
limits, logins), which behind ``TRUSTED_PROXIES`` is the address the proxies saw.
"""

from __future__ import annotations

from flask import g, request

from kassa_common.audit import Actor


def _where() -> dict[str, str | None]:
    return {"ip": request.remote_addr, "user_agent": request.user_agent.string or None}


def dashboard_actor() -> Actor:
    """The signed-in account (``login_required`` set ``g.account``)."""
    return Actor("account", g.account.id, g.account.email, **_where())


def api_actor() -> Actor:
    """The request's API key (``kassa_api.auth.authenticate`` set ``g.principal``), by its id
    and the prefix the dashboard shows of it."""
    return Actor("api_key", g.principal.key_id, g.principal.key_prefix, **_where())


def link_actor(label: str) -> Actor:
    """Whoever holds an emailed link (no login): known by the link and where it came from."""
    return Actor("link", None, label, **_where())


def account_actor(account) -> Actor:
    """An account that has just proved who it is on a page without a login (an invitation)."""
    return Actor("account", account.id, account.email, **_where())
