"""What every server-rendered page shares: its security headers and the HTML error page."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Response, make_response, render_template, request, url_for
from werkzeug.exceptions import HTTPException

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'"
)
TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    405: "Not allowed",
    409: "Conflict",
    410: "Gone",
    413: "Too large",
    422: "Cannot do that",
    429: "Too many requests",
    500: "Something went wrong",
}


def origin(url: str | None) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, else None."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def secure(response: Response, form_targets: tuple[str | None, ...] = ()) -> Response:
    """Add the page security headers; ``form_targets`` are URLs a form may end up at."""
    extra = sorted({o for o in map(origin, form_targets) if o})
    response.headers["Content-Security-Policy"] = CSP + "".join(f" {o}" for o in extra)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def page(template: str, http_status: int = 200, *, form_targets: tuple[str | None, ...] = (), **context) -> Response:
    response = make_response(render_template(template, **context), http_status)
    return secure(response, form_targets)


def way_back() -> tuple[str, str] | None:
    """Where an error page's link leads, and its words: the dashboard's home inside the
    dashboard; elsewhere the page the person came from (an http(s) referrer, the shop's
    page for a shopper who followed its link), or None when the browser sent none."""
    if request.path == "/dashboard" or request.path.startswith("/dashboard/"):
        return url_for("dashboard.accounts.home"), "Go to the dashboard"
    came_from = request.referrer
    if not came_from or origin(came_from) is None or came_from == request.url:
        return None
    if origin(came_from) == origin(request.url):
        return came_from, "Back to the previous page"
    return came_from, f"Back to {urlsplit(came_from).netloc}"


def error_page(status: int, message: str | None = None) -> Response:
    title = TITLES.get(status, "Error")
    return page("pages/error.html", status, title=title, message=message or title, status=status, back=way_back())


def http_error_page(exc: HTTPException) -> Response:
    """The error page for an ``abort()``: the description it was given says why (what is
    missing, why a form was refused); werkzeug's generic text is left out for the title."""
    given = exc.description if exc.description != type(exc).description else None
    return error_page(exc.code or 500, given)
