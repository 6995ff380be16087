"""The publisher's confirm bookkeeping (pure logic; the broker round trip itself is covered
by the integration suites and measured by `make bench`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pika.spec import Basic

from kassa_common.messaging.publisher import Publisher

pytestmark = pytest.mark.unit


class Loop:
    """Stands in for the blocking connection: records the wake-ups scheduled on it."""

    def __init__(self) -> None:
        self.wakeups = 0

    def call_later(self, delay, callback) -> None:
        assert delay == 0
        callback()
        self.wakeups += 1


def confirm(publisher: Publisher, method) -> None:
    publisher._on_confirm(SimpleNamespace(method=method))


def publisher_waiting_for(*tags: int) -> tuple[Publisher, Loop]:
    publisher = Publisher("amqp://unused", "x")
    publisher._conn = loop = Loop()
    publisher._pending = set(tags)
    return publisher, loop


def test_the_last_confirm_of_a_batch_ends_the_wait_at_once():
    publisher, loop = publisher_waiting_for(1, 2, 3)
    confirm(publisher, Basic.Ack(delivery_tag=2, multiple=True))
    assert publisher._pending == {3} and loop.wakeups == 0  # still waiting for tag 3
    confirm(publisher, Basic.Ack(delivery_tag=3))
    assert publisher._pending == set() and loop.wakeups == 1


def test_a_nack_is_remembered_and_also_ends_the_wait():
    publisher, loop = publisher_waiting_for(1, 2)
    confirm(publisher, Basic.Nack(delivery_tag=2, multiple=True))
    assert publisher._nacked == {1, 2} and loop.wakeups == 1
