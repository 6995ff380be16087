"""URLs shown to people, built in one place.

The public pages' addresses, all under ``CHECKOUT_URL`` (``services/api``'s
``routes/pages``): a payment's checkout (``checkout_url``), a product's share link
(``share_link``) and a refund's claim page (``claim_url``). And a webhook URL shown back: it
may carry credentials (``https://user:pw@host``) for a receiver behind basic auth; its
password is never shown again (API, dashboard, logs)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "****"
CHECKOUT_PATH = "/pay/"


def checkout_base(checkout_url: Any) -> str:
    """The checkout pages' base URL: ``CHECKOUT_URL`` itself, or anything carrying it as
    ``checkout_url`` (the settings)."""
    base = checkout_url if isinstance(checkout_url, str) else checkout_url.checkout_url
    return str(base).rstrip("/")


def checkout_url(base: Any, short_id: str) -> str:
    """A payment's checkout page: ``{CHECKOUT_URL}/pay/{short id}``."""
    return f"{checkout_base(base)}{CHECKOUT_PATH}{short_id}"


def base_of_checkout(payment_checkout_url: str) -> str:
    """The ``CHECKOUT_URL`` a payment's checkout URL was built under (``checkout_url``)."""
    return payment_checkout_url.rsplit(CHECKOUT_PATH, 1)[0]


def share_link(base: Any, product_id: uuid.UUID | str) -> str:
    """A product's page, to share: ``{CHECKOUT_URL}/products/{id}``."""
    return f"{checkout_base(base)}/products/{product_id}"


def claim_url(base: Any, claim_token: str) -> str:
    """The claim page of the refund with this token: ``{CHECKOUT_URL}/refunds/{token}``."""
    return f"{checkout_base(base)}/refunds/{claim_token}"


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
