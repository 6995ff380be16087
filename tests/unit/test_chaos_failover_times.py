"""How ``make chaos-ha`` times a failover, from what the load and the receiver recorded."""

from __future__ import annotations

from types import SimpleNamespace

from kassa_dev.chaos.checks import Delivery, failover_times

KILL = 1000.0


def test_each_time_counts_from_the_kill_and_only_payments_asked_for_after_it():
    traffic = SimpleNamespace(
        asked_at={"old": 999.0, "stuck": 999.5, "new": 1001.0, "later": 1003.0},
        answered_at={"old": 999.2, "stuck": 1004.5, "new": 1002.0, "later": 1003.1},
    )
    deliveries = [
        Delivery("e1", "payment.completed", "stuck", True, 1005.0),  # asked for before the kill: not counted
        Delivery("e2", "payment.created", "new", True, 1002.5),
        Delivery("e3", "payment.created", "later", True, 1003.2),
        Delivery("e4", "payment.completed", "later", True, 1006.0),
    ]
    took = failover_times(KILL, traffic, deliveries)
    assert took == {"under_way": 4.5, "create": 2.0, "event": 2.5, "completed": 6.0}


def test_nothing_after_the_kill_is_reported_as_never():
    traffic = SimpleNamespace(asked_at={"old": 999.0}, answered_at={"old": 999.5})
    assert failover_times(KILL, traffic, []) == {"under_way": 0.0, "create": None, "event": None, "completed": None}
