"""URLs shown back to people: a webhook URL may carry credentials (``https://user:pw@host``)
for a receiver behind basic auth; its password is never shown again (API, dashboard, logs)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "****"


def without_password(url: str) -> str:
    """``url`` with the password of its credentials replaced by ``****`` (the user name kept)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    if parts.password is None and "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{hostport}" if user else f":{MASK}@{hostport}"))
