"""A merchant's dashboard on the test database, its overview's clock held on one day.

The fixture ``shop`` is imported by the test modules that use it::

    from tests.support.shop import shop  # noqa: F401  (fixture)
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import pytest

from kassa_common.accounts import keys, merchants
from kassa_common.timefmt import utcnow
from kassa_api.routes.dashboard import overview
from tests.support.api import new_key, set_live_wallet
from tests.support.dashboard import csrf_of, merchant_with_password

TODAY = utcnow().date()  # the page's clock is held on this day (a run may cross midnight)


def at(day: date, *hms: int) -> datetime:
    return datetime.combine(day, time(*hms), UTC)


@pytest.fixture
def shop(client, sessions, monkeypatch):
    """A merchant with a password, a key per mode and a live wallet, and a client logged in as it."""
    monkeypatch.setattr(overview, "utcnow", lambda: at(TODAY, 12))
    email = merchant_with_password(sessions)
    with sessions() as s:
        merchant_id = merchants.merchant_by_email(s, email).id
    set_live_wallet(sessions, merchant_id)
    client.merchant_id = merchant_id
    client.keys = {mode: new_key(sessions, merchant_id, mode, list(keys.SCOPES)) for mode in ("test", "live")}
    client.landing = client.post(
        "/dashboard/login",
        data={"csrf_token": csrf_of(client.get("/dashboard/login")), "email": email, "password": "s3cret-pass"},
    )
    return client
