"""A notifier on a private topology of its own, sending to a real SMTP server: the fixture
``notifier`` yields the server's inbox. (The pipeline tests' ``notifier`` in
``tests.support.notifications`` is fed by the settler on the shared ``bus`` instead.)

Imported by the test modules that use it::

    from tests.support.mail_notifier import notifier  # noqa: F401  (fixture)
"""

from __future__ import annotations

import pytest

from kassa_webhook_sender.email.main import build
from kassa_webhook_sender.engine.retry import RetryPolicy
from tests.support.bus import private_topology
from tests.support.smtp import smtp_server

DASHBOARD = "https://kassa.example/dashboard"


@pytest.fixture
def notifier(settings, engine):
    """A notifier sending to a real SMTP server: yields its inbox."""
    with smtp_server() as (inbox, port), private_topology(settings.rabbitmq_url) as (prefix, _):
        configured = settings.with_(
            bus_prefix=prefix, sender={"smtp_url": f"smtp://127.0.0.1:{port}"}, dashboard_url=DASHBOARD
        )
        n = build(configured, engine=engine, retry=RetryPolicy.from_schedule((0.3,)), poll_interval=0.1).start()
        try:
            yield inbox
        finally:
            n.stop()
