"""The email notifier on a private bus, fed by the real settler: the fixtures ``settler`` and
``notifier`` and the helpers of the tests that follow an event to its email.

The fixtures need ``bus`` too; a test module imports all three::

    from tests.support.bus import bus  # noqa: F401  (fixture)
    from tests.support.notifications import notifier, settler  # noqa: F401  (fixtures)
"""

from __future__ import annotations

import secrets

import pytest

from kassa_common.messaging.relay import relay_pending
from kassa_webhook_sender.email.main import build
from kassa_webhook_sender.engine.retry import RetryPolicy
from tests.support.bus import running_settler
from tests.support.wait import until

DASHBOARD = "https://kassa.example/dashboard"


@pytest.fixture
def settler(bus, settings, sessions):
    with running_settler(settings, bus[1], sessions) as consumers:
        yield consumers[0]


@pytest.fixture
def notifier(bus, settings, engine, settler):
    """``notifier(port)`` starts a notifier sending to 127.0.0.1:port (retrying after 0.3 s)."""
    prefix, _, _ = bus
    started = []

    def start(port: int):
        configured = settings.with_(
            bus_prefix=prefix, sender={"smtp_url": f"smtp://127.0.0.1:{port}"}, dashboard_url=DASHBOARD
        )
        n = build(configured, engine=engine, retry=RetryPolicy.from_schedule((0.3,)), poll_interval=0.1).start()
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()


def customer() -> str:
    return f"c-{secrets.token_hex(5)}@buyer.example"


def arrives(sessions, publisher, condition):
    """Relay what is committed (the relay process's job), then check ``condition``."""

    def check():
        relay_pending(sessions, publisher)
        return condition()

    return until(check, timeout=30, interval=0.1)
