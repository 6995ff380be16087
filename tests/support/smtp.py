"""A real SMTP server (aiosmtpd) on a free local port, keeping what it accepts.

The fixture ``smtp`` is imported by the test modules that use it::

    from tests.support.smtp import smtp  # noqa: F401  (fixture)
"""

from __future__ import annotations

import email
import email.policy
import threading
from contextlib import contextmanager
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller

from tests.support.stack import free_port


class Inbox:
    """What the SMTP server accepted: (envelope recipients, parsed message)."""

    def __init__(self) -> None:
        self.received: list[tuple[tuple[str, ...], EmailMessage]] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            self.received.append((tuple(envelope.rcpt_tos), msg))
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        with self._lock:
            return [msg for rcpts, msg in self.received if address in rcpts]


@contextmanager
def smtp_server(port: int | None = None):
    """An SMTP server on ``port`` (default: a free one) for the block: yields (inbox, port)."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port or free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@pytest.fixture
def smtp():
    with smtp_server() as server:
        yield server
