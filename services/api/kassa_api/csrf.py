"""CSRF protection for the server-rendered forms: one random token per browser session.

``csrf_token()`` puts the token in the (signed) Flask session and returns it for a hidden
input; ``protect(bp)`` makes every POST of a blueprint present it, or get a 403 page.
"""

from __future__ import annotations

import hmac
import secrets

from flask import Blueprint, abort, request, session

FIELD = "csrf_token"
SESSION_KEY = "_csrf"


def csrf_token() -> str:
    token = session.get(SESSION_KEY)
    if not token:
        token = session[SESSION_KEY] = secrets.token_urlsafe(32)
    return token


def valid(sent: str | None) -> bool:
    expected = session.get(SESSION_KEY)
    return bool(expected and sent) and hmac.compare_digest(str(expected), str(sent))


def check() -> None:
    if request.method == "POST" and not valid(request.form.get(FIELD)):
        abort(403, description="This form has expired or was not sent from this site. Go back, reload and try again.")


def protect(bp: Blueprint) -> None:
    """Check the token on every POST of ``bp``; give its templates ``csrf_token()``."""
    bp.before_request(check)
    bp.app_context_processor(lambda: {"csrf_token": csrf_token})
